"""Alerts and where they go: the notifications a run raises, their episodes, targets (webhook,
Slack, Teams, PagerDuty, e-mail) and the holding of a dependant's alerts behind its upstream."""
