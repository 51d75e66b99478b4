import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Someone who signs in to the console. A person exists only while they belong to at least one account. */
export const people = sqliteTable(
  'people',
  {
    id: text('id').primaryKey(),
    /** Stored lower-case: one person per address. */
    email: text('email').notNull(),
    name: text('name'),
    /** argon2id, in Bun.password's PHC string form. */
    passwordHash: text('password_hash').notNull(),
    /** Base32 TOTP secret once enrolment is confirmed. */
    totpSecret: text('totp_secret'),
    /** A secret handed out by enrol and not yet confirmed; the confirmed one keeps working meanwhile. */
    totpPendingSecret: text('totp_pending_secret'),
    /** The last TOTP time step accepted, so a code is never accepted twice. */
    totpLastCounter: integer('totp_last_counter'),
    mfaEnabledAt: text('mfa_enabled_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('people_email').on(t.email)],
)

/** One-time codes that stand in for the authenticator app; only their hashes are kept. */
export const recoveryCodes = sqliteTable(
  'recovery_codes',
  {
    id: text('id').primaryKey(),
    personId: text('person_id').notNull(),
    codeHash: text('code_hash').notNull(),
    usedAt: text('used_at'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('recovery_codes_person').on(t.personId)],
)
