package whatsapp_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
)

// A display name is never sent: the Cloud API cannot change it.
func TestSetProfileNameIsNotApplied(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	out, err := p.SetProfileName(context.Background(), number, fake.Settings(appSecret, verify), "Acme Support")
	require.NoError(t, err)
	require.False(t, out.Applied)
	require.Contains(t, out.Reason, "WhatsApp Manager")
	require.Empty(t, fake.Uploads())
	require.Empty(t, fake.BusinessProfilePosts())
}

// The picture goes through the Resumable Upload API of the number's app
// (a session described by file_name, file_length and file_type, then the
// bytes with OAuth and file_offset 0) and its handle into the business
// profile; without an app_id nothing is sent and the outcome says why.
func TestSetProfilePicture(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	ctx := context.Background()
	picture := profiles.Picture{URL: "https://files.example.com/logo.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nnot-really-but-bytes"), Width: 640, Height: 640}
	out, err := p.SetProfilePicture(ctx, number, fake.Settings(appSecret, verify), picture)
	require.NoError(t, err)
	require.Equal(t, profiles.Outcome{Applied: true}, out)

	uploads := fake.Uploads()
	require.Len(t, uploads, 1)
	u := uploads[0]
	require.Equal(t, "profile.png", u.Session.Get("file_name"))
	require.Equal(t, strconv.Itoa(len(picture.Data)), u.Session.Get("file_length"))
	require.Equal(t, "image/png", u.Session.Get("file_type"))
	require.Equal(t, "OAuth EAAtoken", u.Authorization)
	require.Equal(t, "0", u.FileOffset)
	require.Equal(t, picture.Data, u.Data)
	require.Equal(t, []map[string]any{{"messaging_product": "whatsapp", "profile_picture_handle": u.Handle}}, fake.BusinessProfilePosts())
	data, fileType := fake.ProfilePicture()
	require.Equal(t, picture.Data, data)
	require.Equal(t, "image/png", fileType)

	settings := fake.Settings(appSecret, verify)
	delete(settings, whatsapp.SettingAppID)
	out, err = p.SetProfilePicture(ctx, number, settings, picture)
	require.NoError(t, err)
	require.False(t, out.Applied)
	require.True(t, strings.Contains(out.Reason, "app_id"), "%q", out.Reason)
	require.Len(t, fake.Uploads(), 1, "nothing was uploaded")

	settings = fake.Settings(appSecret, verify)
	settings[whatsapp.SettingAppID] = "999"
	_, err = p.SetProfilePicture(ctx, number, settings, picture)
	var pe *messaging.ProviderError
	require.True(t, errors.As(err, &pe), "an app the token cannot use, got %v", err)
	require.True(t, pe.Permanent)
	settings = fake.Settings(appSecret, verify)
	settings["access_token"] = "EAAwrong"
	_, err = p.SetProfilePicture(ctx, number, settings, picture)
	require.True(t, errors.As(err, &pe) && pe.Code == "provider_auth_failed", "got %v", err)
	require.Len(t, fake.BusinessProfilePosts(), 1)
}
