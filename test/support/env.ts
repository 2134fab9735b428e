// Runs code with some environment variables changed (the AWS SDK reads its region and credentials
// from process.env at each call), and puts them back afterwards.

/** Runs `work` with `changes` applied to process.env (`undefined` removes a variable), then restores it. */
export async function withEnv<T>(changes: Readonly<Record<string, string | undefined>>, work: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(changes).map((name) => [name, process.env[name]]));
  const apply = (values: Readonly<Record<string, string | undefined>>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(changes);
  try {
    return await work();
  } finally {
    apply(before);
  }
}

/** No region, no credentials, no profile: a machine where the SDK finds nothing of its own (IMDS off: nothing is contacted). */
export const BARE_AWS_ENV: Readonly<Record<string, string | undefined>> = {
  AWS_REGION: undefined,
  AWS_DEFAULT_REGION: undefined,
  AWS_PROFILE: undefined,
  AWS_ACCESS_KEY_ID: undefined,
  AWS_SECRET_ACCESS_KEY: undefined,
  AWS_SESSION_TOKEN: undefined,
  AWS_CONFIG_FILE: '/nonexistent/kinsumer-test/config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/kinsumer-test/credentials',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
  AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
  AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
};
