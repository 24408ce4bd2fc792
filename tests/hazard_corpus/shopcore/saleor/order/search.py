from django.db import connection

from .models import Order


def update_search_vectors():
    for order in Order.objects.filter(search_vector=None).iterator(chunk_size=500):
        order.save()


def prepare_search_document(order):
    return "Prepare order " + str(order.pk)  # safe: text


def bulk_update_raw():
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE order_order SET search_vector = NULL WHERE status = %s",  # safe: PA401 UPDATE ... SET
            ["draft"],
        )
        cursor.execute("LISTEN order_created")  # expect: PA402 LISTEN over a pooled connection
