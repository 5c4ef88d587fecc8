"""pytest plugin (`-p live_junit --live-junitxml=PATH`, engine/offline on the path): a JUnit XML
report rewritten as each test starts and ends. pytest's own --junitxml is written when the session
ends, so a run that is killed (the GPU check stops a stage at its slice) leaves none; this one always
names every result so far, and the test that was running is an error saying it did not finish."""

import os
import re
import time
from xml.etree import ElementTree

UNFINISHED = "did not finish: the run was stopped during this test"


def pytest_addoption(parser):
    parser.addoption("--live-junitxml", default=None, help="JUnit XML report rewritten after every test")


def pytest_configure(config):
    path = config.getoption("--live-junitxml")
    if path:
        config.pluginmanager.register(LiveJunit(path), "live-junitxml")


def _clean(text: str) -> str:
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "", text)  # XML 1.0 has no place for these (ANSI colours)


class LiveJunit:
    def __init__(self, path: str):
        self.path = path
        self.cases: dict = {}  # nodeid → {"time", "outcome", "message", "text"}
        self.started = time.time()

    def _case(self, nodeid: str) -> dict:
        return self.cases.setdefault(nodeid, {"time": 0.0, "outcome": "unfinished", "message": UNFINISHED, "text": ""})

    def pytest_runtest_logstart(self, nodeid, location):
        self._case(nodeid)
        self.write()

    def pytest_runtest_logreport(self, report):
        case = self._case(report.nodeid)
        case["time"] += report.duration
        if report.failed:
            if case["outcome"] not in ("failure", "error"):
                case["outcome"] = "failure" if report.when == "call" else "error"
                case["message"] = f"{report.when} failed"
                case["text"] = report.longreprtext
        elif report.skipped and case["outcome"] == "unfinished":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            case["outcome"], case["message"] = "skipped", reason
        elif report.when == "call" and case["outcome"] == "unfinished":
            case["outcome"] = "passed"

    def pytest_runtest_logfinish(self, nodeid, location):
        self.write()

    def pytest_collectreport(self, report):
        if report.failed:
            self.cases[report.nodeid or "collection"] = {"time": 0.0, "outcome": "error", "message": "collection failed",
                                                         "text": report.longreprtext}
            self.write()

    def pytest_sessionfinish(self, session):
        self.write()

    def write(self):
        outcomes = [c["outcome"] for c in self.cases.values()]
        suite = ElementTree.Element("testsuite", name="pytest", tests=str(len(outcomes)),
                                    failures=str(outcomes.count("failure")),
                                    errors=str(outcomes.count("error") + outcomes.count("unfinished")),
                                    skipped=str(outcomes.count("skipped")), time=f"{time.time() - self.started:.3f}")
        for nodeid, case in self.cases.items():
            path, _, name = nodeid.partition("::")
            element = ElementTree.SubElement(suite, "testcase", classname=path.removesuffix(".py").replace("/", "."),
                                             name=name or path, time=f"{case['time']:.3f}")
            tag = {"failure": "failure", "error": "error", "unfinished": "error", "skipped": "skipped"}.get(case["outcome"])
            if tag:
                child = ElementTree.SubElement(element, tag, message=_clean(case["message"]))
                child.text = _clean(case["text"])
        root = ElementTree.Element("testsuites")
        root.append(suite)
        tmp = self.path + ".tmp"
        ElementTree.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
        os.replace(tmp, self.path)  # a reader (or a kill) never sees half a file
