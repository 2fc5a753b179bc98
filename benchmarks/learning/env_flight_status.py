"""The learning benchmark's training env: compact ``flight_status`` (tool: get_flight_status)."""

from benchmarks.learning.compact import compact
from benchmarks.learning.generated.flight_status import FlightStatusEnv


class CompactFlightStatusEnv(FlightStatusEnv):
    capability = compact(FlightStatusEnv.capability, ["get_flight_status"])
