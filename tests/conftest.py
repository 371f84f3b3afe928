"""Root test configuration: the control-plane and oracle fixtures are a plugin shared by all test folders; pytester
runs the plugin's own tests (tests/controlplane/test_skips.py)."""

pytest_plugins = ["tests.controlplane.fixtures", "pytester"]
