"""The case definitions the fixtures are generated from: ``Case`` (in ``case``), the TOML files and the Python families."""
