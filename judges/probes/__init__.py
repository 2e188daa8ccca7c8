"""Bias and robustness probes: perturbations of an answer that should not change a fair
judge's grade, each a registered unit (judges/probes/base.py says how to add one).

The general probes are in `general` (position, verbosity, authority, sentiment, injections,
self-preference), the Arabic ones in `arabic`; `run` plans and grades a probe run through
the batch core. The statistics of a run are in calibration/probes.py.
"""

from judges.probes import arabic, general  # noqa: F401  (registers the probes)
from judges.probes.base import (
    PROBES,
    Pair,
    Probe,
    ProbeContext,
    ProbeError,
    Skip,
    get_probes,
    register,
)

__all__ = [
    "PROBES",
    "Pair",
    "Probe",
    "ProbeContext",
    "ProbeError",
    "Skip",
    "get_probes",
    "register",
]
