"""Where a tail stands, as stored in `tail.state` and shown by the API and the pages.

The values are the contract (stored rows and the API's `tail.state` strings): a member's
value never changes; a new state is a new member.
"""

from enum import StrEnum


class TailStatus(StrEnum):
    connecting = "connecting"
    connected = "connected"
    catching_up = "catching up"  # behind the file's size: reading what was written before
    stalled = "stalled"  # running, and nothing written for longer than stall_seconds
    stopped = "stopped"  # closed or detached: shown as "no longer followed"
    file_not_found = "file not found yet"
    not_a_log = "not a log file"
    permission_denied = "permission denied"
    error = "error"
    # The host or the network, not the server under test:
    host_unreachable = "host unreachable"
    connection_lost = "connection lost"
    reconnecting = "reconnecting"  # stored by versions before the cause stayed the state
    authentication_failed = "authentication failed"
    host_key_not_trusted = "host key not trusted"
    host_key_changed = "host key changed"
    no_answer = "no answer"  # a one-shot program on the host (show code) timed out
    # The dashboard's own database: its disk is full. Paused, nothing read is dropped;
    # `last_error` says how many bytes wait to be stored.
    disk_full = "disk full"

    @property
    def label(self) -> str:
        """What a page says."""
        return _LABELS.get(self, self.value)

    @property
    def infrastructure(self) -> bool:
        return self in INFRASTRUCTURE


_LABELS = {TailStatus.stopped: "no longer followed", TailStatus.disk_full: "paused: disk full"}

INFRASTRUCTURE = frozenset(
    {
        TailStatus.host_unreachable,
        TailStatus.connection_lost,
        TailStatus.reconnecting,
        TailStatus.authentication_failed,
        TailStatus.host_key_not_trusted,
        TailStatus.host_key_changed,
        TailStatus.no_answer,
    }
)
