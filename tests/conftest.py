"""Shared test settings: hypothesis profiles (CI runs the default, deterministic one)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")
