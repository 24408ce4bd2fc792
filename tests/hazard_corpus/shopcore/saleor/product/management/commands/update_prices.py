import psycopg
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Set discounted prices for all products"  # safe: command help

    def handle(self, *args, **options):
        self.stdout.write("Begin price update")  # safe: output
        with psycopg.connect(options["dsn"]) as conn:  # expect: PA405 psycopg 3 prepare_threshold default 5
            conn.execute("SELECT 1")  # safe: plain query
        with psycopg.connect(options["dsn"], prepare_threshold=None) as conn:  # safe: PA405 prepares off
            conn.execute("SELECT 2")  # safe: plain query
