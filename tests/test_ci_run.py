""".ci/run's own machinery: each step's time, the lanes run beside the steps, and the table of
steps and lanes at the end, also when a step or a lane fails (run here on a few stand-in
steps, from the functions .ci/run defines)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CI = os.path.join(ROOT, ".ci", "run")


def _functions():
    text = open(CI, encoding="utf-8").read()
    start, end = text.index("\ntimes=$(mktemp)"), text.index("trap finish EXIT\n")
    return text[start:end + len("trap finish EXIT\n")]


def _run(tmp_path, body):
    script = tmp_path / "ci.sh"
    script.write_text("set -euo pipefail\n" + _functions() + body)
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)


def _table(out):
    return re.findall(r"^ +\d+m\d\ds  (.*)$", out.split("slowest first")[-1], re.M)


def test_the_script_parses_and_runs_readmes_test_command_through_the_doc_commands():
    assert subprocess.run(["bash", "-n", CI]).returncode == 0
    text = open(CI, encoding="utf-8").read()
    assert "python3 tools/doc_commands.py" in text  # README's test command runs there
    assert "lane sanitizers bash tools/sanitizer_suite.sh" in text  # the whole suite
    assert "await sanitizers" in text and "await downloads" in text


def test_each_step_and_lane_is_timed_and_tabled_at_the_end(tmp_path):
    proc = _run(tmp_path, "step one\nlane side bash -c 'echo from the lane; sleep 1'\n"
                          "step two\nawait side\nstep three\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^--- \d+s: one$", proc.stdout, re.M)
    assert "\nfrom the lane\n" in proc.stdout
    assert sorted(_table(proc.stdout)) == ["one", "side (lane)", "three", "two"]
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("fails", ["step", "lane"])
def test_a_failure_names_its_step_and_still_prints_the_table(tmp_path, fails):
    # where a step fails, it fails once the lane has written: the output so far is
    # then something, not a race with the lane's first echo
    body = ("step one\nlane side bash -c 'echo lane output; %s'\nstep two\n%s"
            % ("sleep 30" if fails == "step" else "exit 3",
               'until [ -s "${lane_log[side]}" ]; do sleep 0.05; done\nfalse\n'
               if fails == "step" else "await side\nstep never\n"))
    proc = _run(tmp_path, body)
    assert proc.returncode == (1 if fails == "step" else 3), proc.stdout + proc.stderr
    assert "CI FAILED (status %d) in: two" % proc.returncode in proc.stdout
    assert "lane output" in proc.stdout
    table = _table(proc.stdout)
    assert "one" in table and "two" in table and "never" not in table
    if fails == "step":  # the lane still running is stopped, its output so far shown
        assert "lane side: stopped, its output so far:" in proc.stdout
    else:
        assert "side (lane, failed)" in table
