// @ts-check
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'docs/api/', 'node_modules/', '.tmp/', '**/*.cjs'] },
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The library proper: the AWS SDK clients are imported by one adapter module each.
    files: ['src/**/*.ts'],
    ignores: ['src/dynamodb/dynamo.ts', 'src/kinesis/kinesis.ts', 'src/cli/clients.ts', 'src/testing/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          { name: '@aws-sdk/client-dynamodb', message: 'Only src/dynamodb/dynamo.ts talks to DynamoDB; import types with `import type`.', allowTypeImports: true },
          { name: '@aws-sdk/client-kinesis', message: 'Only src/kinesis/kinesis.ts talks to Kinesis; import types with `import type`.', allowTypeImports: true },
        ],
      }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // chai's property assertions (`.to.be.true`) are expressions by design.
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
