// A small HTTP GET client over libcurl for the Hub: one easy handle per thread (connection reuse),
// redirects followed here rather than by libcurl, so that the Authorization header is sent only to
// the endpoint's own origin and never to the CDN host a large file is redirected to (libcurl's
// CURLOPT_UNRESTRICTED_AUTH guards only its own auth, not a custom header). Network failures and
// retryable statuses are thrown as TransientError so the caller can back off and resume.
#pragma once

#include "core/error.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace tt::hub {

// A failure that may go away on retry: connection refused/reset, timeout, truncated transfer,
// HTTP 408/429/5xx.
class TransientError : public Error {
public:
    using Error::Error;
};
// The host could not be reached at all: its name does not resolve, or nothing accepts the
// connection (refused, no route). Retrying in a second will not help, so callers fail at once
// (or use a complete cached copy) rather than back off.
class UnreachableError : public TransientError {
public:
    using TransientError::TransientError;
};

struct HttpResponse {
    long status = 0;
    std::string url;                                   // the URL that gave this final response
    std::map<std::string, std::string> headers;        // final response, names lowercased
    std::map<std::string, std::string> first_headers;  // the first response (the endpoint's, before redirects)
    std::string body;                                  // only when no body sink took it (errors, JSON)
};

struct HttpRequest {
    std::string url;
    std::string token;        // sent as "Authorization: Bearer" only to auth_origin
    std::string auth_origin;  // a URL whose scheme://host:port may receive the token
    uint64_t range_start = 0; // > 0: ask for "Range: bytes=N-"
    // Body of a final 2xx response: begin() once before the first byte (also for an empty body),
    // then write() for each piece. Either may throw; the transfer is aborted and the exception
    // rethrown from get(). Without a sink the body is kept in HttpResponse::body.
    std::function<void(const HttpResponse& head)> begin;
    std::function<void(const char* data, size_t n)> write;
    const std::atomic<bool>* cancel = nullptr;  // set by another thread: abort the transfer
    long connect_timeout_s = 30;
};

class HttpClient {
public:
    HttpClient();
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // GETs req.url following up to 10 redirects; returns the final response whatever its status
    // (the caller decides what a 404 means). Throws TransientError on network failure.
    HttpResponse get(const HttpRequest& req);

private:
    void* curl_;
};

// True when a and b have the same scheme, host (case-insensitive) and port (default ports filled in).
bool same_origin(const std::string& a, const std::string& b);
// Percent-encodes everything but RFC 3986 unreserved characters (and '/' when keep_slash).
std::string url_encode(const std::string& s, bool keep_slash);

}  // namespace tt::hub
