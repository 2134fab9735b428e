// Loaded by mocha before any spec (see .mocharc.json).
// The SDK warns on every client about Node 20's support window; the warning is noise in test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
