#!/usr/bin/env python3
"""The Cockpit page in headless Chromium (page-test.sh starts everything else).

The page is opened as an admin would: Cockpit's shell at BASE/cpuhpd, which lists it in
its menu (the manifest) and runs it in an iframe; the steps run inside that frame.
Environment: BASE (cockpit-ws, http://127.0.0.1:PORT), BUS (the private bus), CPUCTL,
SYSFS (the fake tree's root), OUT (where the screenshot goes). Each step prints a line; any failure raises
with what the page showed. Every wait is bounded.
"""
import os
import signal
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException,
                                        TimeoutException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BASE = os.environ["BASE"]
BUS = os.environ["BUS"]
CPUCTL = os.environ["CPUCTL"]
SYSFS = os.environ["SYSFS"]
OUT = os.environ["OUT"]
CPUS = 16
WAIT = 30  # seconds, for each step (a loaded machine)

started = time.monotonic()


def step(text):
    print(f"[{time.monotonic() - started:5.1f} s] {text}", flush=True)


def online_file(cpu):
    with open(f"{SYSFS}/devices/system/cpu/cpu{cpu}/online") as f:
        return f.read().strip()


def cells(driver):
    """cpu -> (data-state, data-online, data-hold) of every thread in the map, read in one
    script so that a re-render between two reads cannot mix two maps."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#map [data-cpu]'))"
        ".map(e => [e.dataset.cpu, e.dataset.state, e.dataset.online, e.dataset.hold || null])")
    return {int(r[0]): tuple(r[1:]) for r in rows}


def hold_rows(driver):
    """The text of the cells of each row of the Holds table."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#holds tbody tr'))"
        ".map(r => Array.from(r.cells).map(td => td.textContent.trim()))")


def batch_lines(driver):
    """The first line (the head) of each entry of Last batches, newest first."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#batches .batch-head'))"
        ".map(e => Array.from(e.childNodes).map(n => n.textContent.trim()).filter(t => t).join(' '))")


def click(driver, selector):
    """Clicks the element `selector` names, looked up again if a re-render replaced it."""
    def attempt(d):
        try:
            d.find_element(By.CSS_SELECTOR, selector).click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False
    until(driver, f"click {selector}", attempt)


def until(driver, what, condition, timeout=WAIT):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: condition(d))
    except TimeoutException:
        summary = driver.find_element(By.ID, "summary").text
        alerts = driver.find_element(By.ID, "alerts").text
        logs = ""
        try:
            logs = "\n".join(str(entry) for entry in driver.get_log("browser"))
        except Exception:  # noqa: BLE001 - the log is a courtesy
            pass
        raise AssertionError(
            f"{what}: not within {timeout} s\n  summary: {summary!r}\n  alerts: {alerts!r}\n"
            f"  map: {cells(driver)}\n  browser log:\n{logs}"
        ) from None


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--force-device-scale-factor=1",
        "--lang=en-US",
        # Nothing but the page: no background fetches, updates, sync or proxies.
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--no-proxy-server",
        "--force-color-profile=srgb",
        f"--user-data-dir={os.environ.get('TMPDIR', '/tmp')}/chromium-profile",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path="/usr/bin/chromedriver",
                      service_args=["--allowed-ips=127.0.0.1", "--log-level=WARNING"])
    return webdriver.Chrome(service=service, options=options)


def main():
    step("starting chromium (headless) through chromedriver")
    driver = browser()
    holder = None
    try:
        driver.set_page_load_timeout(60)
        url = BASE + "/cpuhpd"
        step(f"loading {url} (Cockpit's shell)")
        driver.get(url)
        until(driver, "the shell's menu lists 'CPU hotplug' (manifest.json)", lambda d: [
            a for a in d.find_elements(By.CSS_SELECTOR, "nav a") if a.text.strip() == "CPU hotplug"])
        frame = until(driver, "the shell opens the page in its iframe", lambda d: [
            f for f in d.find_elements(By.TAG_NAME, "iframe")
            if f.get_attribute("name") == "cockpit1:localhost/cpuhpd"])[0]
        step(f"shell: menu entry 'CPU hotplug', page in iframe {frame.get_attribute('name')}")
        driver.switch_to.frame(frame)

        # 1. The map with every CPU, in its packages and cores.
        until(driver, "the map shows all 16 CPUs, online", lambda d: len(cells(d)) == CPUS and
              d.find_element(By.ID, "summary").text.startswith("16 CPUs · 16 online · 0 offline"))
        state = cells(driver)
        assert sorted(state) == list(range(CPUS)), state
        assert state[0][0] == "fixed", f"cpu0 has no online file: {state[0]}"
        assert state[1][0] == "protected", f"cpu1 is protected: {state[1]}"
        assert all(state[c] == ("online", "1", None) for c in range(2, CPUS)), state
        # The map's shape, read in one script: threads per core, per package.
        shape = driver.execute_script(
            "return Array.from(document.querySelectorAll('#map .package')).map(p => Array.from("
            "p.querySelectorAll('.core')).map(c => c.querySelectorAll('[data-cpu]').length))")
        assert shape == [[2, 2, 2, 2], [2, 2, 2, 2]], f"threads per core, per package: {shape}"
        summary = driver.find_element(By.ID, "summary").text
        assert summary.startswith("16 CPUs · 16 online · 0 offline"), summary
        profiles = driver.execute_script(
            "return Array.from(document.querySelectorAll('#profiles tbody tr')).map(r => r.dataset.profile)")
        assert profiles == ["evacuate-package-1", "lean"], profiles
        step(f"map: 2 packages x 4 cores x 2 threads, all 16 CPUs; summary '{summary}'")

        # 2. Selection: a package's name selects its threads that can change (not cpu0, which has
        # no online file, nor the protected cpu1); "Clear selection" empties it.
        click(driver, '#map .package[data-package="0"] .package-label')
        mask = driver.find_element(By.ID, "mask").get_attribute("value")
        assert mask == "2-3,8-11", f"package 0 selected the mask {mask!r}"
        click(driver, "#clear-btn")
        until(driver, "the selection is cleared", lambda d: not d.find_element(By.ID, "mask").get_attribute("value")
              and not d.find_elements(By.CSS_SELECTOR, "#map .cpu.selected"))
        step("clicked 'Package 0': mask '2-3,8-11' (not 0: no online file, not 1: protected); cleared")

        # 3. Offline of two CPUs from the page: click them, then "Take offline".
        for c in (2, 3):
            click(driver, f'#map [data-cpu="{c}"]')
        mask = driver.find_element(By.ID, "mask").get_attribute("value")
        assert mask == "2-3", f"the selection gave the mask {mask!r}"
        click(driver, "#offline-btn")
        step("clicked CPUs 2 and 3 (mask '2-3') and 'Take offline'")
        until(driver, "the tree's cpu2/online and cpu3/online are 0",
              lambda d: online_file(2) == "0" and online_file(3) == "0")
        until(driver, "the map shows CPUs 2 and 3 offline",
              lambda d: cells(d)[2][:2] == ("offline", "0") and cells(d)[3][:2] == ("offline", "0"))
        others = {c: online_file(c) for c in range(1, CPUS) if c not in (2, 3)}
        assert set(others.values()) == {"1"}, f"other CPUs changed: {others}"
        batch = until(driver, "the batch appears in Last batches",
                      lambda d: [line for line in batch_lines(d) if "changed 2-3" in line])
        step(f"tree: cpu2/online=0 cpu3/online=0, others 1; map: 2, 3 offline; Last batches: '{batch[0]}'")

        # 4. A hold taken with the real cpuctl appears with who and why.
        holder = subprocess.Popen(
            [CPUCTL, "--bus-address", BUS, "offline", "--who", "live-update", "--why", "kernel update",
             "4-5", "--", "sleep", "60"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        step("cpuctl offline --who live-update --why 'kernel update' 4-5 -- sleep 60 (in the background)")

        def hold_row(d):
            for tds in hold_rows(d):
                if tds[3:5] == ["live-update", "kernel update"]:
                    return tds
            return None

        row = until(driver, "the hold appears in the Holds table", hold_row)
        assert row[1] == "4-5" and row[2] == "offline", row
        until(driver, "the map shows CPUs 4 and 5 held offline",
              lambda d: all(cells(d)[c][:3] == ("held", "0", row[0]) for c in (4, 5)))
        assert online_file(4) == "0" and online_file(5) == "0"
        step(f"holds table: hold {row[0]}, CPUs {row[1]}, {row[2]}, who '{row[3]}', why '{row[4]}'; "
             "map: 4, 5 held offline (badge H" + row[0] + ")")

        # 5. The screenshot: the shell with the whole page in it.
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))
        driver.switch_to.default_content()
        top = int(driver.execute_script(
            "return document.querySelector('iframe[name=\"cockpit1:localhost/cpuhpd\"]')"
            ".getBoundingClientRect().top"))
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1400, "height": min(top + height, 3000), "deviceScaleFactor": 1, "mobile": False})
        time.sleep(0.5)  # one layout after the resize
        os.makedirs(OUT, exist_ok=True)
        path = os.path.join(OUT, "cockpit-page.png")
        assert driver.save_screenshot(path), "save_screenshot failed"
        driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, 'iframe[name="cockpit1:localhost/cpuhpd"]'))
        step(f"screenshot {path} ({os.path.getsize(path)} bytes)")

        # 6. An administrator breaks the hold from the page (ReleaseHold): the CPUs come back.
        click(driver, f'#holds tr[data-hold="{row[0]}"] button')
        step(f"clicked 'Release' on hold {row[0]}")
        until(driver, "the hold disappears and CPUs 4 and 5 come back",
              lambda d: not hold_row(d) and all(cells(d)[c][:2] == ("online", "1") for c in (4, 5)))
        assert online_file(4) == "1" and online_file(5) == "1"
        until(driver, "the page says the hold was released",
              lambda d: "Hold " + row[0] + " released." in d.find_element(By.ID, "alerts").text)
        step("the hold is gone from the page, CPUs 4 and 5 back online in the tree and the map")
        os.killpg(holder.pid, signal.SIGTERM)
        holder.wait(timeout=WAIT)

        # 7. A profile applied and reverted from the page.
        package1 = [4, 5, 6, 7, 12, 13, 14, 15]
        click(driver, '#profiles button[data-profile="evacuate-package-1"]')
        step("clicked 'Apply' on profile evacuate-package-1 (package:1)")
        until(driver, "package 1 goes offline in the tree and the map",
              lambda d: all(online_file(c) == "0" for c in package1) and
              all(cells(d)[c][:2] == ("offline", "0") for c in package1))
        until(driver, "the page says the profile is in force",
              lambda d: "profile evacuate-package-1 in force" in d.find_element(By.ID, "summary").text and
              d.find_elements(By.CSS_SELECTOR, '#profiles button[data-revert]'))
        step("tree and map: 4-7,12-15 offline; summary: profile evacuate-package-1 in force")
        click(driver, '#profiles button[data-revert]')
        until(driver, "package 1 comes back in the tree and the map, no profile in force",
              lambda d: all(online_file(c) == "1" for c in package1) and
              all(cells(d)[c][:2] == ("online", "1") for c in package1) and
              "in force" not in d.find_element(By.ID, "summary").text)
        assert online_file(2) == "0" and online_file(3) == "0", "the revert brought back CPUs it never took"
        step("clicked 'Revert': 4-7,12-15 back online, 2-3 still offline")

        # 8. Browser console: no errors from the page or the shell.
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, f"browser console errors: {errors}"
        step("no errors in the browser console")
    finally:
        if holder and holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(timeout=5)
        driver.quit()
    step("PASS")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
