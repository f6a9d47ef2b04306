"""What endpoints answer and how they link: learnt output schemas and their drift, field paths,
change detection, the provides edges between endpoints and the DAG of a job."""
