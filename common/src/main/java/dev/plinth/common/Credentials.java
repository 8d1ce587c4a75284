package dev.plinth.common;

import java.util.List;

/** Who is calling: the uid and gids that permission checks use. uid 0 is root. */
public record Credentials(int uid, int gid, List<Integer> groups) {
    public static final Credentials ROOT = new Credentials(0, 0, List.of());

    public Credentials {
        groups = List.copyOf(groups);
    }

    public boolean isRoot() {
        return uid == 0;
    }

    public boolean inGroup(int groupId) {
        return gid == groupId || groups.contains(groupId);
    }
}
