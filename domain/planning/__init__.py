"""The domain's planning: planning, freshness_planner, heuristic, change_rate, call_budget,
controllers, guardrails, autonomy, approvals, rejections, churn, context."""
