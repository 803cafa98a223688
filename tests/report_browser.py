#!/usr/bin/env python3
"""Browser test of `flymc report`: headless Chromium loads the report of a real small run.

Runs `flymc data synth-logistic`, `flymc sample` (4 chains) and `flymc report` on it with bench
files, then has Chromium (the Debian package `chromium`; tools/install-deps.sh installs it with
FLYMC_DEPS_BROWSER=1) dump the DOM and take a screenshot, and checks:

- the page loaded cleanly: no console message in Chromium's log (stderr), no network request in
  its network log (--log-net-log), and no reference to another file or a script in the DOM (a
  control page that logs and fetches first shows that the two logs see such things);
- the DOM holds as many <svg> plots as the page announces and as this run must have, and an axis
  label reads back as written;
- the PNG screenshot exists, has the window's size, is not trivially small and is not one
  colour (decoded with zlib from the standard library).

A missing Chromium is a failure, not a skip: the test is part of the suite CI runs.
Usage: report_browser.py --flymc BIN --bench-dir DIR --scaling FILE [--keep DIR]
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

WINDOW = (1200, 3000)


def fail(msg):
    print(f"report_browser: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stderr}")
    return p


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    fail("chromium not found: install it with FLYMC_DEPS_BROWSER=1 tools/install-deps.sh "
         "(tools/test.sh does this by default)")


def chromium(browser, work, url, *extra):
    """Runs headless Chromium on `url` with its log on stderr and its network log in a file;
    returns (stdout, stderr, URLs the page itself requested from the network)."""
    netlog = os.path.join(work, "netlog.json")
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={os.path.join(work, 'profile')}", "--enable-logging=stderr", "--v=0",
           f"--log-net-log={netlog}", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", f"--window-size={WINDOW[0]},{WINDOW[1]}", *extra,
           url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        fail(f"chromium exited with {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stdout, p.stderr, page_requests(netlog)


def page_requests(netlog):
    """URLs of the network requests a file:// page started: their network isolation key names
    the page's site (file://); Chromium's own background requests carry none."""
    with open(netlog) as f:
        log = json.load(f)
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e["type"] == start and "file://" in e.get("params", {}).get(
                "network_isolation_key", "")]


# Console messages (errors, warnings, anything a page logs) in Chromium's log. Its other lines
# (D-Bus, GPU process start-up in a container) say nothing about the page.
CONSOLE = re.compile(r":CONSOLE|Uncaught")


def console_lines(log):
    return [line for line in log.splitlines() if CONSOLE.search(line)]


# What would make a page load something: a self-contained page has none of these.
REFERENCES = re.compile(r"<script|<link|<iframe|<object|<embed|<img|\bsrc=|\bhref=|url\(|@import",
                        re.I)


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG file")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        fail(f"{path}: PNG format {depth}-bit colour type {colour} interlace {interlace} "
             "not decoded by this test")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # the five PNG filters (PNG spec, section 9)
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def check_screenshot(path):
    if not os.path.exists(path):
        fail(f"{path}: no screenshot written")
    size = os.path.getsize(path)
    if size < 30000:
        fail(f"{path}: only {size} bytes: the page rendered (nearly) empty")
    width, height, rows, bpp = png_pixels(path)
    if (width, height) != WINDOW:
        fail(f"{path}: {width}x{height}, not the window's {WINDOW[0]}x{WINDOW[1]}")
    colours, ink = set(), 0
    background = rows[0][:3]
    for y in range(0, height, 3):
        row = rows[y]
        for x in range(0, width * bpp, 3 * bpp):
            px = row[x:x + 3]
            colours.add(px)
            ink += px != background
    sampled = (height // 3 + 1) * (width // 3 + 1)
    if len(colours) < 16:
        fail(f"{path}: {len(colours)} colours: not the plots of a report")
    if ink < 0.03 * sampled:
        fail(f"{path}: {ink} of {sampled} sampled pixels differ from the background")
    print(f"report_browser: screenshot {width}x{height}, {size} bytes, {len(colours)} colours, "
          f"{100.0 * ink / sampled:.1f}% ink")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flymc", required=True)
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--scaling", required=True)
    ap.add_argument("--keep", help="copy report.html and report.png here")
    args = ap.parse_args()
    browser = find_chromium()
    work = tempfile.mkdtemp(prefix="flymc-report-browser-")

    # The checks must see what they look for: a control page that logs to the console and
    # requests an image from the network (a closed local port: no DNS, refused at once).
    control = os.path.join(work, "control.html")
    with open(control, "w") as f:
        f.write('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
                '<script>console.error("control")</script></body></html>')
    _, log, requests = chromium(browser, work, "file://" + control, "--dump-dom")
    if not console_lines(log) or not requests:
        fail("Chromium's logs do not show the control page's console message and network "
             f"request (console: {console_lines(log)}, requests: {requests}): the checks of "
             "the report would see nothing either")

    fl = args.flymc
    data, out, html = (os.path.join(work, n) for n in ("d.csv", "run", "report.html"))
    run([fl, "data", "synth-logistic", "--n", "2000", "--d", "5", "--seed", "1", "--out", data])
    run([fl, "sample", "--data", data, "--algo", "flymc", "--chains", "4", "--warmup", "300",
         "--iters", "1000", "--seed", "2", "--quiet", "--out", out])
    benches = [os.path.join(args.bench_dir, "table1-logistic.json"),
               os.path.join(args.bench_dir, "compare-synth-1e6.json"), args.scaling]
    run([fl, "report", out, "--bench", *benches, "--out", html])

    # 5 sampler plots (bright data, queries, acceptance, step size, lp__), 3 per parameter (trace,
    # rank histograms, autocorrelation) for the 5 parameters, 2 bar charts for each of the two
    # bench files with speedups, 3 scaling plots.
    expected = 5 + 3 * 5 + 2 + 2 + 3
    text = open(html, encoding="utf-8").read()
    announced = re.search(r'<meta name="flymc-plots" content="(\d+)">', text)
    if not announced or int(announced.group(1)) != expected:
        fail(f"the page announces {announced and announced.group(1)} plots, expected {expected}")

    dom, log, requests = chromium(browser, work, "file://" + html, "--dump-dom")
    if console_lines(log) or requests:
        fail("the page did not load cleanly: console " + "\n".join(console_lines(log)) +
             f"; network requests {requests}")
    refs = sorted(set(m.group(0) for m in REFERENCES.finditer(dom)))
    if refs:
        fail(f"the DOM refers to other files or scripts: {refs}")
    svgs = len(re.findall(r"<svg\b", dom))
    if svgs != expected:
        fail(f"the DOM holds {svgs} <svg> elements, expected {expected}")
    labels = set(re.findall(r'<text[^>]*class="axis-label"[^>]*>([^<]*)</text>', dom))
    for want in ("iteration", "queries / iteration", "seconds / iteration", "rank / draws"):
        if want not in labels:
            fail(f"axis label {want!r} not in the DOM (labels: {sorted(labels)})")
    print(f"report_browser: DOM with {svgs} plots and {len(labels)} distinct axis labels")

    png = os.path.join(work, "report.png")
    chromium(browser, work, "file://" + html, f"--screenshot={png}")
    check_screenshot(png)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        for f in (html, png):
            shutil.copy(f, args.keep)
    shutil.rmtree(work)
    print("report_browser: PASS")


if __name__ == "__main__":
    main()
