"""Transfer probe: compact ``reservation_cabin`` (tool: get_reservation_details, never trained on)."""

from benchmarks.learning.compact import compact
from benchmarks.learning.generated.reservation_cabin import ReservationCabinEnv


class CompactReservationCabinEnv(ReservationCabinEnv):
    capability = compact(ReservationCabinEnv.capability, ["get_reservation_details"])
