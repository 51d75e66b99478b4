// Every table in one place: relations across resource groups stay out of the modules.
export * from './accounts'
export * from './api-keys'
export * from './idempotency'
export * from './topics'
export * from './contacts'
export * from './domains'
export * from './emails'
export * from './inbound'
