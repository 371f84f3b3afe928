"""The admission side: policy engine, translation of decisions into claims and patches, and the HTTPS service."""
