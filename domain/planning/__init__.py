"""How a schedule adapts: proposals and their guardrails, one controller per endpoint, graded
autonomy, approvals and rejections, change rates estimated from the calls and the call budget
split across endpoints (the built-in planner), and what the planner reads of the graph."""
