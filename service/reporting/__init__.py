"""The report use cases the API and the CLI share: calibration reports built and rendered
(`calibration`), corrected means (`estimates`), probe runs and the trust-map marks they give
a report (`probes`). The statistics are in calibration/; storage in service/stores/."""
