// libcurl easy interface, one handle per HttpClient. Redirects are followed by hand (see http.h for
// why); the status line and headers of each hop are parsed in the header callback.
#include "hub/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

namespace tt::hub {

namespace {

constexpr int k_max_redirects = 10;
constexpr size_t k_max_buffered_body = 64u << 20;  // model-info JSON of huge repos is a few MB

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

// State shared with the C callbacks of one transfer.
struct Transfer {
    const HttpRequest* req = nullptr;
    HttpResponse* resp = nullptr;
    bool sink_active = false;  // the body goes to req->begin/write
    bool begun = false;
    std::exception_ptr error;  // thrown by a sink: rethrown after curl returns
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {  // a new status line: a fresh set of headers
        t->resp->headers.clear();
        const size_t sp = line.find(' ');
        t->resp->status = sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
        return size * n;
    }
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos)
        t->resp->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t bytes = size * n;
    const long st = t->resp->status;
    const bool to_sink = t->req->write && st >= 200 && st < 300;
    try {
        if (to_sink) {
            if (!t->begun) {
                t->begun = true;
                if (t->req->begin) t->req->begin(*t->resp);
            }
            t->req->write(data, bytes);
        } else {
            if (t->resp->body.size() + bytes > k_max_buffered_body) fail("{}: response body too large", t->resp->url);
            t->resp->body.append(data, bytes);
        }
    } catch (...) {
        t->error = std::current_exception();
        return 0;  // != bytes: libcurl aborts with CURLE_WRITE_ERROR
    }
    return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return t->req->cancel && t->req->cancel->load() ? 1 : 0;
}

// Failures that retrying will not fix.
bool permanent(CURLcode c) {
    switch (c) {
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_FILESIZE_EXCEEDED:
        case CURLE_TOO_MANY_REDIRECTS:
            return true;
        default:
            return false;
    }
}

// The host is not there: no name, nothing listening, no route.
bool unreachable(CURLcode c) {
    return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_COULDNT_CONNECT;
}

void global_init() {
    // curl_global_init is not thread-safe: once, before any worker thread makes a handle.
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UrlParts {
    std::string scheme, host, port;
};

std::optional<UrlParts> parse_url(const std::string& url) {
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
    if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::nullopt;
    UrlParts parts;
    auto get = [&](CURLUPart part, unsigned flags, std::string& out) {
        char* s = nullptr;
        if (curl_url_get(u.get(), part, &s, flags) != CURLUE_OK) return false;
        out = s;
        curl_free(s);
        return true;
    };
    if (!get(CURLUPART_SCHEME, 0, parts.scheme) || !get(CURLUPART_HOST, 0, parts.host) ||
        !get(CURLUPART_PORT, CURLU_DEFAULT_PORT, parts.port))
        return std::nullopt;
    parts.scheme = lower(parts.scheme);
    parts.host = lower(parts.host);
    return parts;
}

}  // namespace

bool same_origin(const std::string& a, const std::string& b) {
    const auto pa = parse_url(a), pb = parse_url(b);
    return pa && pb && pa->scheme == pb->scheme && pa->host == pb->host && pa->port == pb->port;
}

std::string url_encode(const std::string& s, bool keep_slash) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
            out += char(c);
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

HttpClient::HttpClient() {
    global_init();
    curl_ = curl_easy_init();
    if (!curl_) fail("libcurl: cannot create a handle");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::get(const HttpRequest& req) {
    CURL* c = static_cast<CURL*>(curl_);
    HttpResponse resp;
    std::string url = req.url;
    for (int hop = 0;; ++hop) {
        if (hop > k_max_redirects) fail("{}: more than {} redirects", req.url, k_max_redirects);
        const auto parts = parse_url(url);
        if (!parts || (parts->scheme != "http" && parts->scheme != "https"))
            fail("{}: not an http(s) URL{}", url, hop ? fmt::format(" (redirected from {})", req.url) : "");

        curl_easy_reset(c);
        resp.status = 0;
        resp.headers.clear();
        resp.body.clear();
        resp.url = url;
        Transfer t;
        t.req = &req;
        t.resp = &resp;
        char errbuf[CURL_ERROR_SIZE] = {};
        curl_slist* headers = nullptr;
        // note: the token goes only to the configured endpoint's origin; a redirect to a CDN (another
        // host) gets no Authorization, as the Hub's signed CDN URLs need none.
        if (!req.token.empty() && same_origin(url, req.auth_origin))
            headers = curl_slist_append(headers, ("Authorization: Bearer " + req.token).c_str());
        if (req.range_start > 0)
            headers = curl_slist_append(headers, fmt::format("Range: bytes={}-", req.range_start).c_str());
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers, curl_slist_free_all);

        curl_easy_setopt(c, CURLOPT_URL, url.c_str());
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "thintensor/" THINTENSOR_VERSION);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // worker threads: no SIGALRM for DNS timeouts
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s);
        // A stalled transfer (under 1 byte/s for 60 s) is a transient failure, retried with a Range.
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

        const CURLcode rc = curl_easy_perform(c);
        if (t.error) std::rethrow_exception(t.error);
        if (rc == CURLE_ABORTED_BY_CALLBACK) fail("{}: download cancelled", url);
        if (rc != CURLE_OK) {
            const std::string msg = fmt::format("{}: {}", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
            if (permanent(rc)) throw Error(msg);
            if (unreachable(rc)) throw UnreachableError(msg);
            throw TransientError(msg);
        }
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        resp.status = status;
        if (hop == 0) resp.first_headers = resp.headers;
        if (status >= 300 && status < 400 && status != 304) {
            char* next = nullptr;
            curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next);
            if (!next) fail("{}: HTTP {} redirect without a Location", url, status);
            url = next;
            continue;
        }
        if (req.write && status >= 200 && status < 300 && !t.begun && req.begin) req.begin(resp);
        return resp;
    }
}

}  // namespace tt::hub
