"""Experiment workloads: parameter validation and measurement loops, one module per notebook."""
