"""The web console (console/, served at / on http.listen) in headless Chromium.

Driven with selenium through Debian's chromium + chromium-driver. What a
user relies on:
- every page loads with no error in the browser's console;
- the pages show what the test did: a topic with 3 partitions and 120
  records, a consumer group whose lag is 20, a table with 120 rows;
- plots render (SVG with one circle per sample) once the page has sampled;
- a record whose value is HTML is shown as that text, never run as markup;
- /api/v1/cluster and /api/v1/groups (the console's own endpoints) answer
  as docs/api/openapi.json says (checked with test_rest_api's validator);
- on a 3-broker cluster every broker serves the console and lists all three.
Screenshots of every page go to the test's tmp dir (pytest keeps the last
runs' dirs); LS_CONSOLE_SCREENSHOT=<file> also saves the topic page there
(docs/console.png is made that way).
"""

import json
import os
import shutil
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import lsbroker
from kafka_util import unique_topic, wait_topic
from test_rest_api import Api

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.store_agnostic,  # the S3 stage leaves it out (pytest.ini)
              pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                 reason="needs Debian's chromium and chromium-driver")]

XSS = "<img src=x onerror=alert(1)>"
FAST = ("--compaction.interval.ms=200",)


@pytest.fixture
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts,
                         service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    yield d
    d.quit()


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


class Console:
    """Opens pages and checks the browser console after each."""

    def __init__(self, driver, base, shots):
        self.d = driver
        self.base = base
        self.shots = shots
        # Until /metrics is on the broker, the object-store page's probe of it
        # is a 404 the browser reports; that one line is expected then.
        self.no_metrics = _get(base + "/metrics")[0] == 404

    def open(self, page, samples=1):
        self.d.get("%s/#%s" % (self.base, page))
        self.wait(lambda: self.main().get_attribute("data-view") == page and
                  int(self.main().get_attribute("data-samples") or 0) >= samples,
                  "page %s sampled %d times" % (page, samples))
        self.d.save_screenshot(os.path.join(self.shots, page.replace("/", "_") + ".png"))
        self.check_logs()
        return self.main()

    def main(self):
        return self.d.find_element(By.ID, "main")

    def wait(self, cond, what, timeout=60):
        def ok():
            try:
                return cond()
            except Exception:  # the page re-renders under us: try again
                return False
        lsbroker.wait_until(ok, timeout, interval=0.2, what=what)

    def check_logs(self):
        errors = [e for e in self.d.get_log("browser") if e["level"] == "SEVERE"]
        if self.no_metrics:
            errors = [e for e in errors if not ("/metrics" in e["message"] and "404" in e["message"])]
        assert not errors, errors
        assert self.texts("p.error") == []

    # Reads run in one script each: the page re-renders every few seconds,
    # so elements found by one call may be gone by the next.
    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def cells(self, row_text):
        """The cells' text of the first table row whose first cell is row_text."""
        return self.js("""for (const tr of document.querySelectorAll('#main table tr')) {
            const tds = Array.from(tr.querySelectorAll('td'), (td) => td.textContent);
            if (tds.length && tds[0] === arguments[0]) return tds; } return null;""", row_text)

    def texts(self, css):
        return self.js("return Array.from(document.querySelectorAll(arguments[0]),"
                       " (e) => e.textContent);", css)

    def plot_points(self):
        return [int(x) for x in self.js("return Array.from(document.querySelectorAll("
                                        "'svg.plot'), (s) => s.getAttribute('data-points'));")]


def _produce(b, topic):
    """120 records, 40 per partition; partition 0's last value is HTML."""
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(120):
        part = i % 3
        value = XSS if i == 117 else json.dumps({"n": i})
        p.produce(topic, value=value.encode(), key=b"k%d" % i, partition=part)
    assert p.flush(30) == 0


def _commit(b, topic, group):
    """The group commits 100 of the 120 records: 40, 40 and 20; lag 20."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 40), TopicPartition(topic, 1, 40),
                      TopicPartition(topic, 2, 20)], asynchronous=False)
    c.close()


def test_console_pages(broker_factory, browser, tmp_path):
    b = broker_factory(*FAST)
    api = Api(b)
    topic, group = unique_topic("console"), unique_topic("group")
    api.call("POST", "/api/v1/streams", {"name": topic, "partitions": 3}, expect=201)
    wait_topic(b.bootstrap, topic, 3)
    api.call("PUT", "/api/v1/streams/%s/policy" % topic, {"policy": {"enabled": "true"}},
             expect=200)
    _produce(b, topic)
    _commit(b, topic, group)

    # the files are served from the binary, with their types
    st, ctype, body = _get(b.http_url + "/")
    assert st == 200 and ctype.startswith("text/html") and b"/app.js" in body
    assert _get(b.http_url + "/app.js")[1].startswith("text/javascript")
    assert _get(b.http_url + "/style.css")[1].startswith("text/css")
    assert _get(b.http_url + "/no-such-page")[0] == 404
    req = urllib.request.Request(b.http_url + "/", method="POST", data=b"x")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 405

    # the console's endpoints answer as the OpenAPI document says
    _, cl = api.call("GET", "/api/v1/cluster", expect=200)
    assert [x["port"] for x in cl["brokers"]] == [b.port]
    _, gs = api.call("GET", "/api/v1/groups", expect=200)
    g = [x for x in gs["groups"] if x["groupId"] == group]
    assert g and g[0]["lag"] == 20
    assert sorted((o["partition"], o["committedOffset"], o["logEndOffset"], o["lag"])
                  for o in g[0]["offsets"]) == [(0, 40, 40, 0), (1, 40, 40, 0), (2, 20, 40, 20)]
    lsbroker.wait_until(lambda: api.call("GET", "/api/v1/tables/default/" + topic)[1]
                        .get("rows") == 120, 90, interval=0.2, what="the table's 120 rows")

    shots = str(tmp_path / "screenshots")
    os.makedirs(shots)
    ui = Console(browser, b.http_url, shots)

    ui.open("cluster")
    assert ui.texts("#main tbody td:nth-child(3)") == [str(b.port)]

    ui.open("topics")
    assert ui.cells(topic)[1:3] == ["3", "120"]

    # three samples: the throughput plot has two rates, the offset plot three points
    ui.open("topic/" + topic, samples=3)
    assert ui.texts("#topic-name") == [topic]
    for p in range(3):
        assert ui.cells(str(p))[1:4] == ["0", "40", "40"]
    pts = ui.plot_points()
    assert len(pts) == 2 and min(pts) >= 2, pts
    assert len(ui.texts("svg.plot circle.point")) >= 5
    if os.environ.get("LS_CONSOLE_SCREENSHOT"):
        browser.save_screenshot(os.environ["LS_CONSOLE_SCREENSHOT"])

    # the record browser shows the HTML value as text: no <img>, no alert
    ui.open("records/%s/0" % topic)
    assert XSS in ui.texts("pre.payload")
    assert ui.texts("#main img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    assert ui.cells("39")[3] == XSS
    # ... and decodes as JSON and hex on request

    def hex_shown():  # a render may replace the select under the click: retried
        browser.find_element(By.CSS_SELECTOR, "#decode option[value=hex]").click()
        return ui.cells("39")[3] == XSS.encode().hex(" ")
    ui.wait(hex_shown, "the value in hex")
    ui.check_logs()

    ui.open("groups", samples=2)
    heads = dict(zip(ui.texts(".group-id"), ui.texts(".group-lag")))
    assert heads[group] == "20"
    assert min(ui.plot_points()) >= 2

    ui.open("tables")
    row = ui.cells("default." + topic)
    assert row[1:3] == [topic, "120"]
    ui.open("table/default/" + topic, samples=2)
    assert ui.texts("#table-rows") == ["120"]
    pts = ui.plot_points()
    assert len(pts) == 3 and min(pts) >= 2, pts
    assert ui.cells("lakestream.table.enabled")[1:] == ["true", "stream"]

    ui.open("objectstore", samples=2)
    if not ui.no_metrics:  # the request rate comes from /metrics' object-store counters
        assert ui.texts("#monthly-cost")[0].startswith("$")
        assert min(ui.plot_points()) >= 1
    # the price fields default to AWS S3 Standard's and persist in the browser
    assert browser.find_element(By.ID, "price-put").get_attribute("value") == "0.005"
    assert browser.find_element(By.ID, "price-get").get_attribute("value") == "0.0004"

    def set_price():  # a render may replace the field before it has the focus: retried
        f = browser.find_element(By.ID, "price-put")
        f.click()  # select and overtype: clear() fires a change, which re-renders the page
        f.send_keys(Keys.CONTROL, "a")
        f.send_keys("0.01")
        return ui.js("return localStorage.getItem('lakestream.console.price.put')") == "0.01"
    ui.wait(set_price, "the PUT price typed in")
    browser.refresh()
    ui.wait(lambda: browser.find_element(By.ID, "price-put").get_attribute("value") == "0.01",
            "the stored PUT price")
    ui.check_logs()


def test_console_on_every_broker_of_a_cluster(cluster, browser, tmp_path):
    brokers = [cluster.add(*FAST) for _ in range(3)]
    topic = unique_topic("console")
    api = Api(brokers[0])
    api.call("POST", "/api/v1/streams", {"name": topic, "partitions": 3}, expect=201)
    wait_topic(brokers[0].bootstrap, topic, 3)
    _produce(brokers[0], topic)
    groups = [unique_topic("group") for _ in range(4)]  # likely spread over coordinators
    for g in groups:
        _commit(brokers[0], topic, g)
    shots = str(tmp_path / "screenshots")
    os.makedirs(shots)
    for b in brokers:
        wait_topic(b.bootstrap, topic, 3)
        ui = Console(browser, b.http_url, shots)
        lsbroker.wait_until(lambda: len(Api(b).call("GET", "/api/v1/cluster")[1]["brokers"]) == 3,
                            60, interval=0.2, what="three brokers in Metadata")
        ui.open("cluster")
        assert sorted(ui.texts("#main tbody td:nth-child(3)")) == sorted(str(x.port) for x in brokers)
        ui.open("topics")
        assert ui.cells(topic)[1:3] == ["3", "120"]
        ui.open("groups")  # every group, whichever broker coordinates it
        lags = dict(zip(ui.texts(".group-id"), ui.texts(".group-lag")))
        assert {g: lags.get(g) for g in groups} == {g: "20" for g in groups}
