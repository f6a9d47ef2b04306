"""The domain's alerts: alerts, alert_holding, notify_targets."""
