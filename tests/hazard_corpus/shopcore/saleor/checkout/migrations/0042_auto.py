from django.db import migrations


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("checkout", "0041_auto")]
    operations = [
        migrations.RunSQL(
            [
                "SET statement_timeout = 0",  # expect: PA401 RunSQL list with a session SET
                "CREATE INDEX CONCURRENTLY checkout_token_idx ON checkout_checkout (token)",  # safe: DDL
            ],
            reverse_sql="DROP INDEX checkout_token_idx",  # safe: DDL
        ),
        migrations.RunSQL("CREATE TEMP TABLE checkout_tmp AS SELECT token FROM checkout_checkout"),  # expect: PA406 temp table without ON COMMIT DROP
    ]
