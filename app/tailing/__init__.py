"""Log sources: follow a file from a byte offset, locally (file://) or over SSH (ssh://).

A source knows nothing of attempts or the database: it yields events with the offsets
they start at, and keeps reconnecting until it is told to stop.
"""
