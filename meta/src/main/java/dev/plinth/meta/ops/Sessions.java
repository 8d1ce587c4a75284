package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.meta.store.SessionRecord;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.SessionReply;
import java.util.List;

/**
 * Client sessions with leases. The client id comes from the Raft index of the OpenSession entry
 * and its position in the entry's batch, and is above every id handed out before (kept in the
 * store): unique and the same on every replica, also after a restore from a backup starts a new
 * log whose indexes begin again at 1. Expiry is decided by the leader's clock, written as an
 * ExpireSessions entry, so replicas agree on it. Ids come from MDT 0; another MDT takes the id
 * the client brings (it opens its session there when that MDT first asks for one).
 */
public final class Sessions {
    private static final int EXPIRE_BATCH_MAX = 1000;
    private static final byte[] NEXT_CLIENT_ID_KEY = MetaKeys.system("next-client-id");

    private Sessions() {}

    public static SessionReply open(Namespace namespace, MetaMessages.OpenSession request, long idFromLog, long leaseMillis) {
        String name = request.clientName() == null ? "" : request.clientName();
        if (name.length() > 256) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "client name too long");
        }
        long clientId;
        if (request.header().clientId() != 0 && namespace.mdtIndex() != 0) {
            clientId = request.header().clientId(); // a client's session, whose id MDT 0 gave, joins this MDT
        } else {
            clientId = Math.max(idFromLog, namespace.getLong(NEXT_CLIENT_ID_KEY, 0));
            namespace.putLong(NEXT_CLIENT_ID_KEY, clientId + 1);
        }
        SessionRecord session = new SessionRecord(clientId, name, namespace.now() + leaseMillis * 1_000_000);
        namespace.put(MetaKeys.id(MetaKeys.SESSION, clientId), MetaStore.encode(session));
        return new SessionReply(clientId, leaseMillis);
    }

    public static SessionReply renew(Namespace namespace, MetaMessages.RenewSession request, long leaseMillis) {
        SessionRecord session = requireSession(namespace, request.header().clientId());
        namespace.put(MetaKeys.id(MetaKeys.SESSION, session.clientId()), MetaStore.encode(
                new SessionRecord(session.clientId(), session.clientName(), namespace.now() + leaseMillis * 1_000_000)));
        return new SessionReply(session.clientId(), leaseMillis);
    }

    public static Empty close(Namespace namespace, MetaMessages.CloseSession request) {
        end(namespace, request.header().clientId());
        return HandshakeMessages.EMPTY;
    }

    public static Empty expire(Namespace namespace, MetaMessages.ExpireSessions request) {
        int ended = 0;
        for (byte[][] pair : namespace.scan(new byte[] {MetaKeys.SESSION}, null, Integer.MAX_VALUE)) {
            SessionRecord session = MetaStore.decode(SessionRecord.class, pair[1]);
            if (session.expiresAtNanos() < namespace.now() && ended++ < EXPIRE_BATCH_MAX) {
                end(namespace, session.clientId());
            }
        }
        return HandshakeMessages.EMPTY;
    }

    static SessionRecord requireSession(Namespace namespace, long clientId) {
        byte[] value = namespace.getRaw(MetaKeys.id(MetaKeys.SESSION, clientId));
        if (value == null) {
            throw new PlinthException(ErrorCode.STALE_HANDLE, MetaMessages.NO_SESSION + clientId + ": expired or unknown");
        }
        return MetaStore.decode(SessionRecord.class, value);
    }

    /** Ends a session: closes its open files, releases its locks and forgets its deduplicated results. */
    private static void end(Namespace namespace, long clientId) {
        namespace.delete(MetaKeys.id(MetaKeys.SESSION, clientId));
        List<byte[][]> opens = namespace.scan(MetaKeys.id(MetaKeys.OPEN_BY_SESSION, clientId), null, Integer.MAX_VALUE);
        for (byte[][] pair : opens) {
            long inodeId = MetaKeys.secondId(pair[0]);
            InodeRecord inode = namespace.inodeOrNull(inodeId);
            if (inode == null) {
                namespace.delete(pair[0]);
                namespace.delete(MetaKeys.twoIds(MetaKeys.OPEN_BY_INODE, inodeId, clientId));
            } else {
                OpenClose.release(namespace, inode, clientId, OpenClose.count(pair[1]));
            }
        }
        Locks.releaseSession(namespace, clientId);
        for (byte[][] pair : namespace.scan(MetaKeys.id(MetaKeys.DEDUP, clientId), null, Integer.MAX_VALUE)) {
            namespace.delete(pair[0]);
        }
    }
}
