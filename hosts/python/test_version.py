"""The version check at load (version.py): the committed 0.1.0 artifact is
refused with one message naming the range and the version found; the current
one loads. Run by ``make hosts-test`` (unittest, in the hosts venv)."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from host import WIT_VERSION, Runtime  # noqa: E402
from version import IncompatibleComponent, check_version  # noqa: E402

MESSAGE_0_1 = (
    "incompatible component: this host runs sink:coordinator >=0.2.0, <0.3.0, "
    "the component is sink:coordinator@0.1.0"
)


class VersionAtLoad(unittest.TestCase):
    def test_the_0_1_0_artifact_is_refused_with_the_range_and_the_version(self) -> None:
        with tempfile.TemporaryDirectory() as cache:
            with self.assertRaises(IncompatibleComponent) as cm:
                Runtime.load(os.path.join(REPO, "dist", "sink-coordinator-0.1.0.wasm"), cache)
        self.assertEqual(str(cm.exception), MESSAGE_0_1)
        self.assertEqual(cm.exception.found, ["0.1.0"])

    def test_the_current_artifact_loads(self) -> None:
        Runtime.load(os.path.join(REPO, "dist", f"sink-coordinator-{WIT_VERSION}.wasm"))

    def test_names_without_the_interfaces_several_versions_other_versions(self) -> None:
        with self.assertRaisesRegex(IncompatibleComponent, r"^not a sink-coordinator component: .*\(this host runs sink:coordinator >=0.2.0, <0.3.0\)$"):
            check_version(["foo:bar/baz@0.2.0"])
        with self.assertRaisesRegex(IncompatibleComponent, r"several versions \(0.1.0, 0.2.0\)"):
            check_version(["sink:coordinator/table@0.1.0", "sink:coordinator/writer@0.2.0"])
        for v in ["0.3.0", "1.0.0", "0.2.1-rc.1", "x"]:
            with self.assertRaises(IncompatibleComponent) as cm:
                check_version([f"sink:coordinator/coordinator@{v}"])
            self.assertTrue(str(cm.exception).endswith(f"sink:coordinator@{v}"), str(cm.exception))
        self.assertEqual(check_version(["sink:coordinator/coordinator@0.2.9"]), "0.2.9")


if __name__ == "__main__":
    unittest.main()
