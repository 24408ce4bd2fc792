from django.core.management.base import BaseCommand
from django.db import connection

Q = """
DELETE FROM api_ping WHERE created < now() - interval '1 day'
"""  # safe: plain statement


class Command(BaseCommand):
    help = "Prune old pings"

    def handle(self, **options):
        with connection.cursor() as c:
            c.execute("SET work_mem = '64MB'")  # expect: PA401 session SET in a management command
            c.execute(Q)
            c.execute("RESET work_mem")  # expect: PA401 RESET
