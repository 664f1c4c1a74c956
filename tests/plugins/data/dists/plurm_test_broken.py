# A plugin whose import fails, as when its vendor library is missing.
import plurm_test_no_such_vendor_library  # noqa: F401
