"""The domain's graph: graph, dag, dag_clear, dependencies, provides, outputs, schema_inference,
field_paths, change_detection."""
