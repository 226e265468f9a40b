"""`make bench-collector`'s Sentry row: an error event as sentry-python sends it, in argv[2] copies
with fresh event ids, each gzip-compressed (as the SDK sends without the brotli module), written to
argv[1]/<n>.envelope.gz.

A handler five calls deep raises while a request is in scope: the frames carry source context (this
file is read), the event carries breadcrumbs, tags, a user, contexts and the SDK's own fields, about
5 KB of JSON.
"""
import gzip
import sys
import uuid

import sentry_sdk
from sentry_sdk.transport import Transport

captured = []


class Capture(Transport):
    def capture_envelope(self, envelope):
        captured.append(envelope.serialize())


sentry_sdk.init(dsn="http://key@127.0.0.1/1", transport=Capture, release="shop@1.4.2+77",
                environment="production", server_name="web-7", send_default_pii=False)
sentry_sdk.set_tag("region", "eu-1")
sentry_sdk.set_tag("tenant", "acme")
sentry_sdk.set_user({"id": "user-42"})
for step in ("GET /cart 200", "POST /cart/items 201", "GET /checkout 200", "POST /pay 500"):
    sentry_sdk.add_breadcrumb(category="http", message=step, data={"duration_ms": 12})


def load_order(order_id):
    rows = {"o-1": {"count": "seven", "sku": "bb-17", "price": "12.50"}}
    return rows[order_id]


def parse_quantity(order):
    quantity = order["count"]
    return int(quantity)


def price_of(order):
    quantity = parse_quantity(order)
    return quantity * float(order["price"])


def checkout(order_id):
    order = load_order(order_id)
    total = price_of(order)
    return {"order": order_id, "total": total}


def handle_request(path):
    order_id = path.rsplit("/", 1)[-1]
    return checkout(order_id)


with sentry_sdk.isolation_scope() as scope:
    scope.set_transaction_name("POST /pay/{order_id}")
    try:
        handle_request("/pay/o-1")
    except Exception as error:
        sentry_sdk.capture_exception(error)
sentry_sdk.flush()
envelope = captured[0]
event_id = envelope[len(b'{"event_id":"'):len(b'{"event_id":"') + 32]
assert len(event_id) == 32 and envelope.count(event_id) == 2, "the id in the header and in the event"
for index in range(int(sys.argv[2])):
    copy = envelope.replace(event_id, uuid.uuid4().hex.encode())
    with open(f"{sys.argv[1]}/{index}.envelope.gz", "wb") as out:
        out.write(gzip.compress(copy, compresslevel=6))
print(len(envelope))
