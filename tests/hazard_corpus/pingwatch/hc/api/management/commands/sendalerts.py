from django.core.management.base import BaseCommand
from django.db import connection


class Command(BaseCommand):
    help = "Sends UP/DOWN email alerts"

    def handle(self, **options):
        self.stdout.write("Set up the alert loop")  # safe: output
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [1])  # expect: PA403 sendalerts singleton lock
        while True:
            self.process_one()
