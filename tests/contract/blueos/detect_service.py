"""BlueOS's helper scanning one port, as bluerobotics/BlueOS core/services/helper/main.py does it
(`Helper.simple_http_request` and `Helper.detect_service`), written from that code with the standard
library only: Python's http.client, a new connection per request, a 1 s socket timeout (the connect and
every read), BlueOS's headers (`User-Agent: python`, `Accept: */*`, `application/json` where it wants
JSON), redirects followed, gzip decoded, and every path of the OpenAPI document GET as written, in
order. The page title is read with html.parser instead of BeautifulSoup.

Usage: detect_service.py PORT. Prints one JSON object: the ServiceInfo fields, plus `requests` (path,
status, seconds, timeout, error for each request made) and `seconds` (the whole scan)."""
import gzip
import http.client
import json
import socket
import sys
import time
from html.parser import HTMLParser
from io import BytesIO
from urllib.parse import urlparse

DOCS_CANDIDATE_URLS = ["/docs", "/v1.0/ui/"]
API_CANDIDATE_URLS = ["/docs.json", "/openapi.json", "/swagger.json"]
requests = []


def simple_http_request(host, port, path="/", timeout=None, method="GET", try_json=False, follow_redirects=0):
    response_fields = {"status": None, "decoded_data": None, "as_json": None, "error": None, "timeout": False}
    headers = {"User-Agent": "python", "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
    if try_json:
        headers["Accept"] = "application/json"
    started = time.monotonic()
    conn = None
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        location_header = response.getheader("location")
        if follow_redirects > 0 and location_header is not None:
            url = urlparse(location_header)
            return simple_http_request(url.hostname or host, url.port or port, url.path or path, timeout, method, try_json, follow_redirects - 1)
        response_fields["status"] = response.status
        if response.status == http.client.OK:
            encoding = response.headers.get_content_charset() or "utf-8"
            if response.getheader("Content-Encoding") == "gzip":
                with gzip.GzipFile(fileobj=BytesIO(response.read())) as file:
                    data = file.read()
            else:
                data = response.read()
            response_fields["decoded_data"] = data.decode(encoding, errors="replace")
            if try_json:
                response_fields["as_json"] = json.loads(response_fields["decoded_data"])
    except socket.timeout as e:
        response_fields["timeout"] = True
        response_fields["error"] = str(e)
    except (json.JSONDecodeError, http.client.HTTPException, socket.error) as e:
        response_fields["error"] = str(e)
    except Exception as e:  # the helper never raises
        response_fields["error"] = repr(e)
    finally:
        if conn:
            conn.close()
    requests.append({"path": path, "status": response_fields["status"], "seconds": round(time.monotonic() - started, 3), "timeout": response_fields["timeout"], "error": response_fields["error"]})
    return response_fields


class Title(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside = False
        self.title = None

    def handle_starttag(self, tag, attrs):
        if tag == "title" and self.title is None:
            self.inside = True
            self.title = ""

    def handle_endtag(self, tag):
        if tag == "title":
            self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.title += data


def detect_service(port):
    info = {"valid": False, "title": "Unknown", "documentation_url": "", "versions": [], "port": port, "metadata": None}
    response = simple_http_request("127.0.0.1", port, "/", timeout=1.0, follow_redirects=10)
    if response["timeout"]:
        return info
    if response["status"] == http.client.BAD_REQUEST or response["decoded_data"] is None:
        return info
    info["valid"] = True
    parser = Title()
    parser.feed(response["decoded_data"])
    info["title"] = parser.title.strip() if parser.title is not None else "Unknown"

    response = simple_http_request("127.0.0.1", port, "/register_service", timeout=1.0, try_json=True, follow_redirects=10)
    if response["status"] == http.client.OK and isinstance(response["as_json"], dict):
        info["metadata"] = response["as_json"]

    for documentation_path in DOCS_CANDIDATE_URLS:
        response = simple_http_request("127.0.0.1", port, documentation_path, timeout=1.0, follow_redirects=10)
        if response["status"] != http.client.OK:
            continue
        info["documentation_url"] = documentation_path
        for api_path in API_CANDIDATE_URLS:
            response = simple_http_request("127.0.0.1", port, api_path, timeout=1.0, try_json=True, follow_redirects=10)
            if response["status"] != http.client.OK or not isinstance(response["as_json"], dict):
                continue
            for version_path in response["as_json"].get("paths", {}).keys():
                response = simple_http_request("127.0.0.1", port, str(version_path), timeout=1.0, follow_redirects=10)
                if response["status"] == http.client.OK and response["decoded_data"] is not None and "swagger-ui" in response["decoded_data"]:
                    info["versions"] += [version_path]
        break
    return info


if __name__ == "__main__":
    started = time.monotonic()
    result = detect_service(int(sys.argv[1]))
    result["requests"] = requests
    result["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(result))
