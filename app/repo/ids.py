"""What an id or an offset may be before it is sent to the database."""

# Ids are INTEGER columns (32 bits on PostgreSQL), offsets BIGINT. A larger value, from a
# path, a query or a body, names nothing; the databases would refuse to bind or compare it
# (an error, not a miss), so it is never sent.
MAX_ID = 2**31 - 1
MAX_OFFSET = 2**63 - 1


def storable(value: int) -> bool:
    return -MAX_ID - 1 <= value <= MAX_ID
