// The errors the in-memory backends answer with, shaped as the AWS SDK's own.

/**
 * An AWS-SDK-shaped service error (name, `$fault`, `$metadata.httpStatusCode`), as the real
 * client would throw it; `classifyAwsError` sees no difference.
 */
export function awsError(name: string, options: { readonly message?: string; readonly status?: number } = {}): Error {
  const status = options.status ?? (/InternalFailure|InternalServerError|ServiceUnavailable/.test(name) ? 500 : 400);
  const error = new Error(options.message ?? name) as Error & { $fault: string; $metadata: { httpStatusCode: number } };
  error.name = name;
  error.$fault = status >= 500 ? 'server' : 'client';
  error.$metadata = { httpStatusCode: status };
  return error;
}
