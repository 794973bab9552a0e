"""Tests that import trio-asyncio run after every other test of the session.

Importing trio-asyncio installs its event loop policy for the whole process: from then on
``asyncio.run()`` builds a trio-asyncio loop, which cannot host cairn's trio guest run
(tests/hosts). A module that sets ``IMPORTS_TRIO_ASYNCIO = True`` is moved to the end, so
no test order puts an asyncio host after it (design/providers.md).
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def imports_trio_asyncio(item: pytest.Item) -> bool:
        module = getattr(item, "module", None)
        return bool(getattr(module, "IMPORTS_TRIO_ASYNCIO", False))

    items.sort(key=imports_trio_asyncio)  # stable: the order within each group is kept
