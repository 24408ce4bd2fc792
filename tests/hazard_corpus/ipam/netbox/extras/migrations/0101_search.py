from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("extras", "0100_customfield")]

    operations = [
        migrations.RunSQL(
            sql="CREATE INDEX extras_cachedvalue_object ON extras_cachedvalue (object_type_id, object_id)",  # safe: DDL
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RunSQL("SET CONSTRAINTS ALL IMMEDIATE"),  # safe: PA401 SET CONSTRAINTS is transaction-scoped
        migrations.RunSQL("SELECT set_config('search_path', 'public', false)"),  # expect: PA401 session set_config in a migration
        migrations.AlterField(
            model_name="cachedvalue",
            name="value",
            field=models.TextField(verbose_name="Set value"),  # safe: verbose_name label
        ),
    ]
