from django.db import connection
from django_pglocks import advisory_lock

from netbox.constants import ADVISORY_LOCK_KEYS


class JobRunner:
    @advisory_lock(ADVISORY_LOCK_KEYS["job-schedules"])  # expect: PA403 django_pglocks decorator: session lock
    def enqueue_once(self):
        pass

    def run(self):
        with advisory_lock(ADVISORY_LOCK_KEYS["job-schedules"]):  # expect: PA403 django_pglocks context manager
            self.handle()
        self.log("Set job status to completed")  # safe: log text

    def export(self):
        for obj in self.queryset.iterator(chunk_size=2000):
            yield obj
