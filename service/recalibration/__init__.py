"""The service's own recalibration: calibration scopes run after K new SME labels, on a
schedule, or when an audit of a live guarantee fails (runner.py)."""
