package dev.plinth.meta.store;

/** A client session: alive while renewed before {@code expiresAtNanos} (leader clock). */
public record SessionRecord(long clientId, String clientName, long expiresAtNanos) {}
