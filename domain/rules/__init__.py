"""The domain's rules: rules, rule_damping, rule_firing, conditions, condition_text."""
