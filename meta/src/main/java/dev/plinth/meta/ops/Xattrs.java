package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.XattrNames;
import dev.plinth.wire.messages.MetaMessages.XattrValue;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Extended attributes: get, list, set, remove. Names carry a Linux namespace; user.* follows the
 * file's permissions, trusted.* and security.* are root's, and system.* (ACLs) is not supported.
 */
public final class Xattrs {
    private Xattrs() {}

    private static void checkName(String name) {
        if (name == null || name.isEmpty() || name.getBytes(StandardCharsets.UTF_8).length > 255 || name.indexOf('\0') >= 0) {
            throw new PlinthException(name != null && name.length() > 255 ? ErrorCode.NAME_TOO_LONG : ErrorCode.INVALID_ARGUMENT, "bad attribute name");
        }
        if (!(name.startsWith("user.") || name.startsWith("trusted.") || name.startsWith("security."))) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, "attribute namespace of '" + name + "'");
        }
    }

    private static void checkAccess(Namespace namespace, InodeRecord inode, String name, int mask) {
        if (name.startsWith("user.")) {
            namespace.check(inode, mask);
        } else if (!namespace.caller().isRoot() && (name.startsWith("trusted.") || mask == Namespace.WRITE)) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "attribute '" + name + "' is root's");
        }
    }

    /** The store's key of a file's attribute: the one place that says so (path resolution prefetches it). */
    static byte[] key(long inodeId, String name) {
        return MetaKeys.named(MetaKeys.XATTR, inodeId, name);
    }

    public static XattrValue get(Namespace namespace, MetaMessages.GetXattr request) {
        checkName(request.name());
        InodeRecord inode = namespace.inode(request.inodeId());
        checkAccess(namespace, inode, request.name(), Namespace.READ);
        byte[] value = namespace.getRaw(key(inode.inodeId(), request.name()));
        if (value == null) {
            throw new PlinthException(ErrorCode.NO_ATTRIBUTE, request.name());
        }
        return new XattrValue(value);
    }

    /** An attribute's value, or null where it is absent or the caller may not read it (for listings, which do not fail on one entry). */
    static byte[] readableValue(Namespace namespace, InodeRecord inode, String name) {
        checkName(name);
        try {
            checkAccess(namespace, inode, name, Namespace.READ);
        } catch (PlinthException e) {
            return null;
        }
        return namespace.getRaw(key(inode.inodeId(), name));
    }

    public static XattrNames list(Namespace namespace, MetaMessages.ListXattr request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        List<String> names = new ArrayList<>();
        for (byte[][] pair : namespace.scan(MetaKeys.id(MetaKeys.XATTR, inode.inodeId()), null, 10_000)) {
            String name = MetaKeys.nameOf(pair[0]);
            if (!name.startsWith("trusted.") || namespace.caller().isRoot()) {
                names.add(name);
            }
        }
        return new XattrNames(names);
    }

    /** What makes a name and value settable, before any inode is looked at. */
    private static void checkNameAndValue(String name, byte[] value) {
        checkName(name);
        if (value.length > Namespace.XATTR_VALUE_BYTES_MAX) {
            throw new PlinthException(ErrorCode.RESULT_TOO_LARGE, "attribute values are limited to " + Namespace.XATTR_VALUE_BYTES_MAX + " bytes");
        }
    }

    /** Sets an attribute of a file this change created, which has none yet, and returns the inode as it is now; its caller settles the times. */
    static InodeRecord setOnNewFile(Namespace namespace, InodeRecord inode, String name, byte[] value) {
        checkNameAndValue(name, value);
        checkAccess(namespace, inode, name, Namespace.WRITE);
        namespace.put(key(inode.inodeId(), name), value);
        return withFlagsFor(inode, name, true);
    }

    /** The inode with the flag an attribute stands for set or cleared: {@link MetaMessages#SSE_XATTR} makes a file encrypted. */
    private static InodeRecord withFlagsFor(InodeRecord inode, String name, boolean present) {
        if (!name.equals(MetaMessages.SSE_XATTR)) {
            return inode;
        }
        return inode.withFlags(present ? inode.flags() | MetaMessages.FLAG_ENCRYPTED : inode.flags() & ~MetaMessages.FLAG_ENCRYPTED);
    }

    public static Empty set(Namespace namespace, MetaMessages.SetXattr request) {
        checkNameAndValue(request.name(), request.value());
        InodeRecord inode = namespace.inode(request.inodeId());
        checkAccess(namespace, inode, request.name(), Namespace.WRITE);
        byte[] key = key(inode.inodeId(), request.name());
        boolean exists = namespace.getRaw(key) != null;
        if ((request.flags() & MetaMessages.XATTR_CREATE) != 0 && exists) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, request.name());
        }
        if ((request.flags() & MetaMessages.XATTR_REPLACE) != 0 && !exists) {
            throw new PlinthException(ErrorCode.NO_ATTRIBUTE, request.name());
        }
        namespace.put(key, request.value());
        namespace.putInode(withFlagsFor(inode, request.name(), true).withTimes(inode.atimeNanos(), inode.mtimeNanos(), namespace.now()));
        return HandshakeMessages.EMPTY;
    }

    public static Empty remove(Namespace namespace, MetaMessages.RemoveXattr request) {
        checkName(request.name());
        InodeRecord inode = namespace.inode(request.inodeId());
        checkAccess(namespace, inode, request.name(), Namespace.WRITE);
        byte[] key = key(inode.inodeId(), request.name());
        if (namespace.getRaw(key) == null) {
            throw new PlinthException(ErrorCode.NO_ATTRIBUTE, request.name());
        }
        namespace.delete(key);
        namespace.putInode(withFlagsFor(inode, request.name(), false).withTimes(inode.atimeNanos(), inode.mtimeNanos(), namespace.now()));
        return HandshakeMessages.EMPTY;
    }
}
