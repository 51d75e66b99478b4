import { AppError } from '../errors/app-error'
import type { Actor, Role } from '../lib/actor'

const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2, owner: 3 }

export const atLeast = (role: Role, min: Role) => RANK[role] >= RANK[min]

/**
 * The lowest role whose session may change things in a route group (the first
 * path segment); reads need only membership. Viewers change nothing; keys,
 * their limits and the account's settings belong to owners and admins; a
 * person's own steps (sign-out, two-factor, accepting an invitation) and the
 * team, whose service decides change by change, are open to every member.
 */
const CHANGE_ROLE: Record<string, Role> = {
  auth: 'viewer',
  invite: 'viewer',
  team: 'viewer',
  'api-keys': 'admin',
  limits: 'admin',
  account: 'admin',
}

export const changeRoleFor = (group: string): Role => CHANGE_ROLE[group] ?? 'developer'

/** Refuses a session whose role is below `min`; keys and the system are not people and have no role. */
export function requireRole(actor: Actor, min: Role, what: string) {
  if (actor.person && !atLeast(actor.person.role, min)) {
    throw new AppError('insufficient_role', { message: `Your role (${actor.person.role}) cannot ${what}; it needs ${min === 'owner' ? 'an owner' : `${min} or above`}.` })
  }
}
