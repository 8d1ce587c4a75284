// The ceiling of any FUSE file system on a machine, for bench/fuse-compare.sh and bench/dataset-bench.sh:
// an in-memory low-level file system that does no work (lookup, create, flush, release, getattr, setattr,
// unlink, mkdir, rmdir, fsync; write keeps only the size, read returns that many zeros). fsync answers
// instead of ENOSYS, after which the kernel would stop sending it, so a synced write costs its round trip.
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#define NB 262144
struct ent { struct ent *next; fuse_ino_t parent; char *name; fuse_ino_t ino; mode_t mode; };
static struct ent *tab[NB]; static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static fuse_ino_t next_ino = 2;
#define INODES_MAX 4000000
static mode_t modes[INODES_MAX];
static off_t sizes[INODES_MAX];
static char zeros[1 << 20];
static unsigned h(fuse_ino_t p, const char *n){ unsigned x = p * 2654435761u; while(*n) x = x*31 + (unsigned char)*n++; return x % NB; }
static struct ent *find(fuse_ino_t p, const char *n){ for(struct ent *e=tab[h(p,n)]; e; e=e->next) if(e->parent==p && !strcmp(e->name,n)) return e; return 0; }
static void fill(fuse_ino_t ino, mode_t mode, struct stat *st){ memset(st,0,sizeof *st); st->st_ino=ino; st->st_mode=mode; st->st_nlink=S_ISDIR(mode)?2:1; st->st_size = ino < INODES_MAX ? sizes[ino] : 0; }
static void reply_entry(fuse_req_t req, fuse_ino_t ino, mode_t mode){ struct fuse_entry_param e; memset(&e,0,sizeof e); e.ino=ino; e.attr_timeout=1.0; e.entry_timeout=1.0; fill(ino,mode,&e.attr); fuse_reply_entry(req,&e); }
static void m_lookup(fuse_req_t req, fuse_ino_t p, const char *n){ pthread_mutex_lock(&mu); struct ent *e=find(p,n); fuse_ino_t i=e?e->ino:0; mode_t m=e?e->mode:0; pthread_mutex_unlock(&mu); if(!e){ struct fuse_entry_param z; memset(&z,0,sizeof z); z.entry_timeout=1.0; fuse_reply_entry(req,&z); return;} reply_entry(req,i,m); }
static void m_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi){ struct stat st; mode_t m = ino==1 ? (S_IFDIR|0755) : ino < INODES_MAX ? modes[ino] : 0; fill(ino,m,&st); fuse_reply_attr(req,&st,1.0); }
static struct ent *add(fuse_ino_t p, const char *n, mode_t mode){ struct ent *e=malloc(sizeof *e); e->parent=p; e->name=strdup(n); e->ino=next_ino++; e->mode=mode; modes[e->ino]=mode; unsigned b=h(p,n); e->next=tab[b]; tab[b]=e; return e; }
static void m_mkdir(fuse_req_t req, fuse_ino_t p, const char *n, mode_t mode){ pthread_mutex_lock(&mu); if(find(p,n) || next_ino >= INODES_MAX){int err = next_ino >= INODES_MAX ? ENOSPC : EEXIST; pthread_mutex_unlock(&mu); fuse_reply_err(req,err); return;} struct ent *e=add(p,n,S_IFDIR|mode); fuse_ino_t i=e->ino; pthread_mutex_unlock(&mu); reply_entry(req,i,S_IFDIR|mode); }
static void m_create(fuse_req_t req, fuse_ino_t p, const char *n, mode_t mode, struct fuse_file_info *fi){ pthread_mutex_lock(&mu); if(find(p,n) || next_ino >= INODES_MAX){int err = next_ino >= INODES_MAX ? ENOSPC : EEXIST; pthread_mutex_unlock(&mu); fuse_reply_err(req,err); return;} struct ent *e=add(p,n,S_IFREG|(mode&07777)); fuse_ino_t i=e->ino; pthread_mutex_unlock(&mu); struct fuse_entry_param ep; memset(&ep,0,sizeof ep); ep.ino=i; ep.attr_timeout=1.0; ep.entry_timeout=1.0; fill(i,S_IFREG|(mode&07777),&ep.attr); fuse_reply_create(req,&ep,fi); }
static void rm(fuse_req_t req, fuse_ino_t p, const char *n){ pthread_mutex_lock(&mu); unsigned b=h(p,n); struct ent **pp=&tab[b]; while(*pp && !((*pp)->parent==p && !strcmp((*pp)->name,n))) pp=&(*pp)->next; struct ent *e=*pp; if(e){*pp=e->next; free(e->name); free(e);} pthread_mutex_unlock(&mu); fuse_reply_err(req, e?0:ENOENT); }
static void m_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi){ fuse_reply_open(req,fi); }
static void m_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi){ if(ino < INODES_MAX && off + (off_t)size > sizes[ino]) sizes[ino] = off + size; fuse_reply_write(req, size); }
static void m_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi){ off_t end = ino < INODES_MAX ? sizes[ino] : 0; size_t n = off >= end ? 0 : (size_t)(end - off) < size ? (size_t)(end - off) : size; if(n > sizeof zeros) n = sizeof zeros; fuse_reply_buf(req, zeros, n); }
static void m_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi){ fuse_reply_err(req,0); }
static void m_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi){ fuse_reply_err(req,0); }
static void m_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi){
  if((to_set & FUSE_SET_ATTR_SIZE) && ino < INODES_MAX) sizes[ino] = attr->st_size;
  struct stat st; mode_t m = ino==1 ? (S_IFDIR|0755) : ino < INODES_MAX ? modes[ino] : 0; fill(ino,m,&st); fuse_reply_attr(req,&st,1.0); }
static void m_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi){ fuse_reply_open(req,fi); }
static void m_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi){ fuse_reply_buf(req,NULL,0); }
static const struct fuse_lowlevel_ops ops = { .lookup=m_lookup, .getattr=m_getattr, .mkdir=m_mkdir, .create=m_create, .unlink=rm, .rmdir=rm,
  .open=m_open, .read=m_read, .write=m_write, .flush=m_ok, .release=m_ok, .fsync=m_fsync, .setattr=m_setattr, .opendir=m_opendir, .readdir=m_readdir, .releasedir=m_ok };
int main(int argc, char *argv[]){
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv); struct fuse_cmdline_opts o;
  if (fuse_parse_cmdline(&args, &o) != 0 || !o.mountpoint) { fprintf(stderr,"usage: memfs MOUNTPOINT\n"); return 1; }
  struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
  if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, o.mountpoint)) return 1;
  struct fuse_loop_config *cfg = fuse_loop_cfg_create(); fuse_loop_cfg_set_max_threads(cfg, 16);
  int r = fuse_session_loop_mt(se, cfg);
  fuse_session_unmount(se); fuse_remove_signal_handlers(se); fuse_session_destroy(se); return r;
}
