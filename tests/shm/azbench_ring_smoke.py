#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Smoke test of `azbench ring`: the JSON rows parse and carry the documented keys with sane values,
# --csv writes the same columns, producers and consumer sharing one CPU neither livelock nor
# stall, --plot writes a PNG (when gnuplot is installed), and bad usage exits 2. The
# recommendation names azrun's options and keeps azrun's defaults unless the candidate beat them
# beyond the noise of their repeats (one run measures no noise: never beaten; none: no pick).
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REQUIRED = ["transport", "placement", "producers", "capacity", "slot_bytes", "batch", "wait",
            "rtt_median_ns", "rtt_p99_ns", "rtt_p999_ns", "throughput_rps", "errors", "status"]
RTT_TRANSPORTS = {"ring", "pipe", "socket", "mq"}
ALL_TRANSPORTS = RTT_TRANSPORTS | {"stream", "memcpy"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def parse_json_lines(text):
    rows, recs = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)  # every stdout line is one JSON object
        (recs if "recommendation" in obj else rows).append(obj)
    return rows, recs


def check_row(r):
    name = "%s/%s P=%s slot=%s batch=%s" % (r.get("transport"), r.get("wait"),
                                            r.get("producers"), r.get("slot_bytes"),
                                            r.get("batch"))
    for k in REQUIRED:
        check(k in r, "%s: key %s missing" % (name, k))
    check(r.get("errors") == 0, "%s: %s verification errors" % (name, r.get("errors")))
    check(r.get("status") == "ok" or str(r.get("status")).startswith("skip"),
          "%s: status %s" % (name, r.get("status")))
    if r.get("status") != "ok":
        return
    check(r["transport"] in ALL_TRANSPORTS, "%s: unknown transport" % name)
    check(r["throughput_rps"] is not None and r["throughput_rps"] > 0,
          "%s: throughput %s" % (name, r["throughput_rps"]))
    if r["transport"] in RTT_TRANSPORTS:
        med, p99, p999 = r["rtt_median_ns"], r["rtt_p99_ns"], r["rtt_p999_ns"]
        check(med is not None and 0 < med <= p99 <= p999,
              "%s: quantiles %s %s %s" % (name, med, p99, p999))
        check(r["wait"] in (("spin", "futex") if r["transport"] == "ring" else ("block",)),
              "%s: wait %s" % (name, r["wait"]))
    if r["transport"] in ("ring", "stream", "memcpy"):
        check(isinstance(r["capacity"], int) and r["capacity"] >= 2,
              "%s: capacity %s" % (name, r["capacity"]))


def main():
    azbench = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="azbench-smoke-")
    try:
        # 1. The default sweep within a 2-second budget, as JSON lines, then one pipeline run
        #    each of the candidate and azrun's defaults (tic-tac-toe, about 1.3 s each).
        p, secs = run([azbench, "ring", "--seconds", "2", "--json", "--default-runs", "1"])
        check(p.returncode == 0, "json run exit %d: %s" % (p.returncode, p.stderr[-2000:]))
        rows, recs = parse_json_lines(p.stdout)
        check(len(rows) >= 20, "only %d rows" % len(rows))
        check(secs < 45, "a 2-second budget and 2 pipeline runs took %.1f s" % secs)
        for r in rows:
            check_row(r)
        seen = {r.get("transport") for r in rows}
        check(ALL_TRANSPORTS <= seen, "transports missing: %s" % (ALL_TRANSPORTS - seen))
        check({r.get("wait") for r in rows if r.get("transport") == "ring"} == {"spin", "futex"},
              "ring rows lack spin or futex")
        check(any(r.get("memcpy_share") for r in rows if r.get("transport") == "stream"),
              "no stream row has a memcpy share")
        check(len(recs) == 1, "expected one recommendation object, got %d" % len(recs))
        if recs:
            rec = recs[0]
            for k in ("capacity", "batch", "deadline_us", "wait", "micro_capacity",
                      "micro_batch", "micro_deadline_us", "beats_defaults"):
                check(k in rec, "recommendation lacks %s" % k)
            check(rec.get("micro_capacity", 0) >= 2 and rec.get("micro_batch", 0) >= 1,
                  "recommendation values %s" % rec)
            text = rec.get("recommendation", "")
            check("capacity=" not in text and "deadline_us=" not in text,
                  "not azrun's option names: %s" % text)
            check("--ring-capacity %d --max-batch %d --batch-deadline-us %d" % (
                rec.get("micro_capacity"), rec.get("micro_batch"),
                rec.get("micro_deadline_us")) in text, "candidate not named: %s" % text)
            if "defaults_sims_per_s" in rec:   # the candidate differed from the defaults
                check(rec["defaults_sims_per_s"] > 0 and rec["candidate_sims_per_s"] > 0,
                      "pipeline runs measured nothing: %s" % rec)
                check(rec["noise"] is None, "one run has no noise: %s" % rec)
            # One run of the defaults measures no noise, so nothing beats them: azrun's own.
            check(rec.get("beats_defaults") == 0 and (rec.get("capacity"), rec.get("batch"),
                  rec.get("deadline_us")) == (256, 0, 200),  # --max-batch 0: the backend chooses
                  "recommended without a measured noise: %s" % rec)

        # 2. Everything on one CPU, with spinning: must finish (bounded spin, then sleep) and
        #    move requests; the table and --csv agree.
        csv_path = os.path.join(tmp, "ring.csv")
        png_path = os.path.join(tmp, "ring.png")
        args = [azbench, "ring", "--seconds", "1", "--placement", "same", "--producers", "2",
                "--capacities", "16", "--slots", "64", "--batches", "1,8", "--transports",
                "ring,pipe", "--quiet", "--csv", csv_path, "--default-runs", "0"]
        have_gnuplot = shutil.which("gnuplot") is not None
        if have_gnuplot:
            args += ["--plot", png_path]
        p, secs = run(args, timeout=60)
        check(p.returncode == 0, "same-CPU run exit %d: %s" % (p.returncode, p.stderr[-2000:]))
        check(secs < 20, "same-CPU run took %.1f s (stall?)" % secs)
        check(p.stdout.splitlines()[0].split()[:3] == ["transport", "place", "P"],
              "table header: %r" % p.stdout.splitlines()[:1])
        check("recommendation: No recommendation: the round trips suggest --ring-capacity"
              in p.stdout, "--default-runs 0 still recommends: %s" % p.stdout[-600:])
        with open(csv_path, newline="") as f:
            crow = list(csv.DictReader(f))
        check(len(crow) == 6, "csv has %d rows, want 6 (4 ring + 2 pipe)" % len(crow))
        for r in crow:
            for k in REQUIRED:
                check(k in r, "csv lacks column %s" % k)
            check(r["placement"] == "same" and r["status"] == "ok" and r["errors"] == "0",
                  "csv row %s" % r)
            check(float(r["throughput_rps"] or 0) > 0, "no progress on one CPU: %s" % r)
        if have_gnuplot:
            with open(png_path, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "--plot did not write a PNG")

        # 3. Usage errors exit 2; --help exits 0.
        for bad in (["ring", "--slots", "65"], ["ring", "--capacities", "12"],
                    ["ring", "--waits", "poll"], ["ring", "--default-runs", "17"],
                    ["ring", "--game", "chess"], ["nosuchmode"], []):
            p, _ = run([azbench] + bad, timeout=10)
            check(p.returncode == 2, "azbench %s exit %d, want 2" % (" ".join(bad), p.returncode))
        p, _ = run([azbench, "--help"], timeout=10)
        check(p.returncode == 0 and "ring" in p.stdout, "azbench --help")
        p, _ = run([azbench, "ring", "--help"], timeout=10)
        check(p.returncode == 0 and "--placement" in p.stdout, "azbench ring --help")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("azbench ring smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
