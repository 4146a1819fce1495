// One flat config for the whole workspace. Type-aware rules catch the async mistakes that
// matter here: a floating promise in a sweep loop is a lock that never gets released.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/.devstack/**', 'bench/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/only-throw-error': 'error',
      // Async route handlers and stubs without an await are idiomatic (Fastify, vitest); the
      // promise rules above catch the mistakes that matter.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
      // postgres.js rows and JSON payloads are `any`-typed at the edge; we narrow them with zod.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      'no-restricted-properties': ['error', {
        object: 'process', property: 'env',
        message: 'Runtime packages never read process.env; take typed options (only main.ts, xtask and testkit may).',
      }],
    },
  },
  {
    files: ['**/main.ts', 'tools/**', 'packages/testkit/**', '**/*.test.ts', '**/vitest.config.ts', 'vitest.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
