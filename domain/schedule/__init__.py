"""The domain's schedule: schedule, spacing, jitter, quiet, quiet_passes, quiet_preview, pauses,
governor, limits, overlap, steering, timeline, time_range."""
