#!/usr/bin/env python3
"""Drives headless Chromium through the DevTools protocol over --remote-debugging-pipe (no
WebSocket library needed), for the web UI tests: navigate, fill, click, evaluate, screenshot.

    drive.py CHROMIUM STEPS.json OUTPUT_DIR  ->  prints a JSON object on stdout

Steps: {"navigate": url} | {"fill": [selector, value]} | {"click": selector} (waits for the page it
loads) | {"eval": expression} | {"screenshot": file name}. The result lists, per step, the page's URL
afterwards and the value of "eval" steps, plus every script exception and console or log error the
pages raised. A step that fails or takes over 30 s ends the run with "failed" set.
"""
import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium, profile):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        # Chromium reads commands from descriptor 3 and writes to 4. Set up in the child after the
        # fork (close_fds would close 3 and 4 after this runs, so it is off; the pipes' other
        # descriptors are closed here, and every other one of ours is close-on-exec).
        def wire():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)
            # dup2 onto the same number keeps close-on-exec, which os.pipe sets.
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
            for descriptor in (to_browser_read, from_browser_write, self.to_browser, self.from_browser):
                if descriptor > 4:
                    os.close(descriptor)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,900",
             "--no-first-run", "about:blank"],
            close_fds=False, preexec_fn=wire,
            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("DRIVE_DEBUG") else subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.errors = []
        self.session = None

    def send(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self.read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def read(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("the browser did not answer within 30 s")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("the browser closed its pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self.note(message)
        return message

    def note(self, event):
        self.events.append(event["method"])
        params = event.get("params", {})
        if event["method"] == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("exception: " + details.get("exception", {}).get("description", details.get("text", "?")))
        elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append("log: " + entry.get("text", "?") + (" (" + entry["url"] + ")" if entry.get("url") else ""))

    def wait_for(self, method, timeout=30):
        deadline = time.time() + timeout
        while method not in self.events:
            self.read(deadline)
        self.events.remove(method)

    def open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression!r}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main():
    chromium, steps_file, output = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(steps_file) as handle:
        steps = json.load(handle)
    os.makedirs(output, exist_ok=True)
    results = []
    failed = None
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            browser.open_page()
            for step in steps:
                value = None
                if "navigate" in step:
                    browser.events.clear()
                    browser.send("Page.navigate", {"url": step["navigate"]})
                    browser.wait_for("Page.loadEventFired")
                elif "fill" in step:
                    selector, text = step["fill"]
                    browser.evaluate(f"document.querySelector({json.dumps(selector)}).value = {json.dumps(text)}")
                elif "click" in step:
                    browser.events.clear()
                    browser.evaluate(f"document.querySelector({json.dumps(step['click'])}).click()")
                    browser.wait_for("Page.loadEventFired")
                elif "eval" in step:
                    value = browser.evaluate(step["eval"])
                elif "screenshot" in step:
                    shot = browser.send("Page.captureScreenshot", {"format": "png"})
                    with open(os.path.join(output, step["screenshot"]), "wb") as handle:
                        handle.write(base64.b64decode(shot["data"]))
                results.append({"url": browser.evaluate("location.href"), "value": value})
        except Exception as error:  # reported to the test, which fails with it
            failed = f"step {len(results) + 1}: {error}"
        finally:
            browser.close()
    json.dump({"steps": results, "errors": browser.errors, "failed": failed}, sys.stdout)


if __name__ == "__main__":
    main()
