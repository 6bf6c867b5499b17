"""Log sources: follow a file from a byte offset, locally (file://) or over SSH (ssh://).

A source knows nothing of attempts or the database: it yields events (events.py) with the
offsets they start at, and keeps reconnecting until it is told to stop. protocol.py is the
interface, factory.py makes the sources of one app and owns its SSH pool (ssh_pool.py),
status.py names the states a tail shows, wire.py frames the remote follower's events.
"""
