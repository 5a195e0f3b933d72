"""A simulator of the cloud path (issue 28): a fake Gemini API that answers with the
offline model's decisions (or a test's script) at the vendors' published latencies, so
the real `GeminiModel` adapter can be measured and contract-tested with no network."""
