#!/usr/bin/env python3
"""The web view in a real browser: headless Chromium (Debian's chromium and chromium-driver,
driven by python3-selenium; no network) loads the page of a running `streamdet run --serve`,
checks that the stream shows a live image (naturalWidth > 0) and that the figures change
between two reads, and saves a screenshot. Exits 77 (ctest: skipped) when Chromium, its driver
or Selenium is missing.

usage: web_view_browser_test.py STREAMDET MODEL OUT_DIR
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def main(streamdet, model, out_dir):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not chromium or not driver:
        skip("chromium or chromedriver is not installed (Debian: chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("python3-selenium is not installed")

    os.makedirs(out_dir, exist_ok=True)
    port = free_port()
    token = "browser-test-token"
    log_path = os.path.join(out_dir, "streamdet.log")
    log = open(log_path, "w")
    run = subprocess.Popen([streamdet, "run", "-m", model, "-s", "synth:w=640,h=360,fps=30,frames=0,live=1",
                            "--serve", f"127.0.0.1:{port}", "--serve-token", token], stderr=log, stdout=subprocess.DEVNULL)
    browser = None
    try:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860",
                    "--no-first-run", "--disable-extensions", "--disable-background-networking"):
            options.add_argument(arg)
        browser = webdriver.Chrome(service=Service(driver), options=options)
        browser.set_page_load_timeout(60)
        url = f"http://127.0.0.1:{port}/?token={token}"

        def page_loaded():
            try:
                browser.get(url)
                return browser.execute_script("return document.getElementById('status') !== null")
            except Exception:  # the server is not up yet
                return False

        wait_for("the page", page_loaded)
        width = wait_for("a live image in the stream's <img>", lambda: browser.execute_script(
            "const i = document.getElementById('stream-0'); return i && i.complete !== undefined && i.naturalWidth"))
        assert width == 640, f"the stream's image is {width} pixels wide, expected 640"

        def figures():
            return browser.execute_script(
                "return [document.getElementById('uptime').textContent,"
                " document.getElementById('frames-done-0').textContent,"
                " document.getElementById('status').textContent]")

        first = wait_for("figures", lambda: (f := figures()) and f[1] not in ("", "0") and f)
        second = wait_for("figures that change", lambda: (f := figures()) and f[0] != first[0] and f[1] != first[1] and f)
        assert second[2] == "ok", f"status badge says {second[2]!r}"
        # The screenshot once the window has a verdict and the stage table is filled.
        wait_for("the verdict", lambda: browser.execute_script(
            "return document.getElementById('verdict').textContent !== 'measuring...'"))
        time.sleep(1.5)
        shot = os.path.join(out_dir, "web-view.png")
        browser.save_screenshot(shot)
        print(f"figures {first} -> {second}; image {width} px wide; screenshot {shot}")
    finally:
        if browser:
            browser.quit()
        run.send_signal(signal.SIGINT)
        try:
            code = run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            code = "hung"
        log.close()
    assert code == 130, f"streamdet exited {code} after Ctrl-C, expected 130; log in {log_path}"
    with open(log_path) as f:
        assert token not in f.read(), "the token appears in the log"
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
