"""Root test configuration: the control-plane and oracle fixtures are a plugin shared by all test folders."""

pytest_plugins = ["tests.controlplane.fixtures"]
